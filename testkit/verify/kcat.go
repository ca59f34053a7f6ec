package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/herald-outbox/herald/kafka"
)

// HeaderEventID is the record header that carries the event id. It is
// spelled out here rather than imported from herald's envelope package, so
// a renamed constant there shows up as a failure here.
const HeaderEventID = "herald-event-id"

// ErrUnknownTopic is what ReadTopic wraps when the broker kcat asked does not
// know the topic: it was never created, or was created a moment ago and that
// broker has not learned of it yet.
var ErrUnknownTopic = errors.New("unknown topic")

// ReadTopic reads every record of topic from the beginning to the current
// end of each partition with kcat (librdkafka), a client independent of
// herald's franz-go code:
//
//	kcat -C -b BROKERS -t TOPIC -o beginning -e -J -q
func ReadTopic(ctx context.Context, brokers []string, topic string) ([]Record, error) {
	return ReadSecuredTopic(ctx, brokers, kafka.Security{}, topic)
}

// ReadSecuredTopic is ReadTopic over a secured listener: sec becomes kcat's
// librdkafka settings (KcatConfig), handed over in a private file (-F) so
// that no password is on kcat's command line.
func ReadSecuredTopic(ctx context.Context, brokers []string, sec kafka.Security, topic string) ([]Record, error) {
	args := []string{"-C", "-b", strings.Join(brokers, ","), "-t", topic, "-o", "beginning", "-e", "-J", "-q"}
	if sec.Enabled() {
		file, err := writeKcatConfig(sec)
		if err != nil {
			return nil, err
		}
		defer os.Remove(file)
		args = append([]string{"-F", file}, args...)
	}
	cmd := exec.CommandContext(ctx, "kcat", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("kcat: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kcat: %w", err)
	}
	records, parseErr := ParseKcat(stdout)
	if parseErr != nil {
		io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	switch {
	case strings.Contains(stderr.String(), "Unknown topic or partition"):
		return nil, fmt.Errorf("kcat -C -t %s: %w: %s", topic, ErrUnknownTopic, strings.TrimSpace(stderr.String()))
	case waitErr != nil:
		return nil, fmt.Errorf("kcat -C -t %s: %v: %s", topic, waitErr, strings.TrimSpace(stderr.String()))
	case strings.Contains(stderr.String(), "ERROR"):
		// kcat can report a topic error and still exit 0.
		return nil, fmt.Errorf("kcat -C -t %s: %s", topic, strings.TrimSpace(stderr.String()))
	case parseErr != nil:
		return nil, parseErr
	}
	return records, nil
}

// KcatConfig returns the librdkafka settings (kcat -X NAME=VALUE) that
// connect like sec. librdkafka cannot check a certificate against a name
// other than the broker's host, so with a ServerName the chain is checked
// and the name is not. Debian 12's kcat (librdkafka 2.0.2) fails SCRAM
// against Kafka 4 (a nonce bug fixed in librdkafka 2.6.1): read with PLAIN
// there.
func KcatConfig(sec kafka.Security) (map[string]string, error) {
	if err := sec.Validate(); err != nil {
		return nil, err
	}
	conf := map[string]string{"security.protocol": strings.ToLower(sec.Protocol())}
	if sec.Protocol() == "SSL" || sec.Protocol() == "SASL_SSL" {
		conf["ssl.ca.location"] = "probe" // the system's roots
		if sec.CAFile != "" {
			conf["ssl.ca.location"] = sec.CAFile
		}
		if sec.CertFile != "" {
			conf["ssl.certificate.location"] = sec.CertFile
			conf["ssl.key.location"] = sec.KeyFile
		}
		if sec.ServerName != "" {
			conf["ssl.endpoint.identification.algorithm"] = "none"
		}
	}
	if sec.SASLMechanism != "" {
		conf["sasl.mechanisms"] = sec.Mechanism()
		conf["sasl.username"] = sec.SASLUsername
		conf["sasl.password"] = sec.SASLPassword
		if sec.SASLPasswordFile != "" {
			b, err := os.ReadFile(sec.SASLPasswordFile)
			if err != nil {
				return nil, fmt.Errorf("kcat: SASL password file: %w", err)
			}
			conf["sasl.password"] = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		}
	}
	return conf, nil
}

// writeKcatConfig writes KcatConfig(sec) to a file only its owner can
// read and returns its name.
func writeKcatConfig(sec kafka.Security) (string, error) {
	conf, err := KcatConfig(sec)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "herald-kcat-*.conf")
	if err != nil {
		return "", fmt.Errorf("kcat config: %w", err)
	}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, conf[k])
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("kcat config: %w", err)
	}
	return f.Name(), nil
}

// kcatRecord is one line of `kcat -J`: headers are a flat [key, value, ...]
// array; key and payload are null when absent.
type kcatRecord struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

// ParseKcat reads `kcat -C -J` output, one JSON object per line.
func ParseKcat(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var kr kcatRecord
		if err := json.Unmarshal(b, &kr); err != nil {
			return nil, fmt.Errorf("kcat output line %d: %w", line, err)
		}
		if len(kr.Headers)%2 != 0 {
			return nil, fmt.Errorf("kcat output line %d: odd headers array", line)
		}
		rec := Record{Topic: kr.Topic, Position: Position{kr.Partition, kr.Offset}, Headers: map[string]string{}}
		if kr.Key != nil {
			rec.Key, rec.HasKey = *kr.Key, true
		}
		for i := 0; i < len(kr.Headers); i += 2 {
			if _, dup := rec.Headers[kr.Headers[i]]; !dup {
				rec.Headers[kr.Headers[i]] = kr.Headers[i+1]
			}
		}
		rec.HeaderEventID = rec.Headers[HeaderEventID]
		if kr.Payload != nil {
			var env struct {
				EventID string `json:"event_id"`
			}
			// A payload that is not an envelope leaves PayloadEventID empty;
			// Check reports the record if the header is missing too.
			if json.Unmarshal([]byte(*kr.Payload), &env) == nil {
				rec.PayloadEventID = env.EventID
			}
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kcat output: %w", err)
	}
	return out, nil
}
