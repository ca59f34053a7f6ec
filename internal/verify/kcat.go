package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// HeaderEventID is the record header that carries the event id. It is
// spelled out here rather than imported from herald's envelope package, so
// a renamed constant there shows up as a failure here.
const HeaderEventID = "herald-event-id"

// ReadTopic reads every record of topic from the beginning to the current
// end of each partition with kcat (librdkafka), a client independent of
// herald's franz-go code:
//
//	kcat -C -b BROKERS -t TOPIC -o beginning -e -J -q
func ReadTopic(ctx context.Context, brokers []string, topic string) ([]Record, error) {
	cmd := exec.CommandContext(ctx, "kcat", "-C", "-b", strings.Join(brokers, ","), "-t", topic,
		"-o", "beginning", "-e", "-J", "-q")
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
