package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// The secured side of the local stack, as stack/up.sh (stack/lib.sh) sets
// it up; the README's stack table lists the same.
const (
	// StackKafkaUser is the SASL user and the client certificate's CN.
	StackKafkaUser = "herald"
	// StackKafkaPassword is its SASL password (SCRAM-SHA-512, SCRAM-SHA-256,
	// PLAIN).
	StackKafkaPassword = "herald-kafka-secret"
	// StackKafkaTopicPrefix starts the names of the topics, groups and
	// transactional ids the ACLs let the user have.
	StackKafkaTopicPrefix = "herald"
	// StackMySQLTLSUser must connect with TLS (REQUIRE SSL; on PostgreSQL,
	// a hostssl rule).
	StackMySQLTLSUser     = "herald_tls"
	StackMySQLTLSPassword = "herald-tls-secret"
	// StackMySQLX509User must connect with a client certificate signed by
	// the stack's CA (REQUIRE X509; on PostgreSQL it logs in with the
	// certificate alone, whose CN herald is mapped to it).
	StackMySQLX509User     = "herald_x509"
	StackMySQLX509Password = "herald-x509-secret"
)

// SecuredKafka is the local stack's secured Kafka listeners.
type SecuredKafka struct {
	// SASLBrokers is the SASL_SSL listener of the first broker.
	SASLBrokers []string
	// SSLBrokers is the listener that requires a client certificate.
	SSLBrokers []string
	// CAFile signs the brokers' certificates (and the client's).
	CAFile string
	// CertFile and KeyFile are the client certificate (CN=herald).
	CertFile, KeyFile string
}

// StackTLSDir is where stack/up.sh keeps its CA and certificates.
func StackTLSDir() string {
	dir := os.Getenv("HERALD_STACK_DIR")
	if dir == "" {
		dir = "/var/tmp/herald-stack"
	}
	return filepath.Join(dir, "tls")
}

// StackKafka returns the secured listeners once the SASL_SSL one lets the
// stack's user read the metadata; it fails t (skips it under -short) when
// they do not answer.
func StackKafka(t testing.TB) SecuredKafka {
	t.Helper()
	dir := StackTLSDir()
	k := SecuredKafka{
		SASLBrokers: []string{"127.0.0.1:9192"}, SSLBrokers: []string{"127.0.0.1:9292"},
		CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client.key"),
	}
	opts, err := k.SCRAM(kafka.SASLScramSHA512).Options()
	if err != nil {
		requireServer(t, "Kafka's SASL_SSL listener (stack certificates)", err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.SASLBrokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
		requireServer(t, "Kafka's SASL_SSL listener", err)
	}
	return k
}

// SCRAM returns the settings of the SASL_SSL listener with mechanism and
// the stack user's password.
func (k SecuredKafka) SCRAM(mechanism string) kafka.Security {
	return kafka.Security{CAFile: k.CAFile, SASLMechanism: mechanism, SASLUsername: StackKafkaUser, SASLPassword: StackKafkaPassword}
}

// MutualTLS returns the settings of the listener that requires a client
// certificate.
func (k SecuredKafka) MutualTLS() kafka.Security {
	return kafka.Security{CAFile: k.CAFile, CertFile: k.CertFile, KeyFile: k.KeyFile}
}

// StackMySQLTLS returns a DSN of database name for the TLS-only user,
// without its password, and the options that connect it (the stack's CA,
// the password in a file); it fails t when the user cannot connect.
func StackMySQLTLS(t testing.TB, name string) (string, mysql.ConnOptions) {
	t.Helper()
	cfg, err := driver.ParseDSN(localstack.MySQLDSN())
	if err != nil {
		t.Fatalf("parse HERALD_MYSQL_DSN: %v", err)
	}
	cfg.User, cfg.Passwd, cfg.DBName = StackMySQLTLSUser, "", name
	opts := mysql.ConnOptions{
		TLSMode: mysql.TLSVerifyIdentity, TLSCAFile: filepath.Join(StackTLSDir(), "ca.pem"),
		PasswordFile: WriteSecret(t, "mysql-password", StackMySQLTLSPassword),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	db, err := mysql.OpenWith(ctx, cfg.FormatDSN(), opts)
	if err != nil {
		requireServer(t, "MariaDB over TLS (user "+StackMySQLTLSUser+")", err)
	}
	db.Close()
	return cfg.FormatDSN(), opts
}

// StackPostgresTLS returns a URL of database name for the TLS-only role
// (the same name and password as StackMySQLTLSUser's), verifying the
// server against the stack's CA, without its password, and the options
// that connect it (the password in a file); it fails t when the role
// cannot connect.
func StackPostgresTLS(t testing.TB, name string) (string, postgres.ConnOptions) {
	t.Helper()
	u, err := url.Parse(localstack.PostgresURL())
	if err != nil {
		t.Fatalf("parse HERALD_POSTGRES_URL: %v", err)
	}
	u.User, u.Path = url.User(StackMySQLTLSUser), "/"+name
	q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {filepath.Join(StackTLSDir(), "ca.pem")}}
	u.RawQuery = q.Encode()
	opts := postgres.ConnOptions{PasswordFile: WriteSecret(t, "postgres-password", StackMySQLTLSPassword)}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	db, err := postgres.OpenWith(ctx, u.String(), opts)
	if err != nil {
		requireServer(t, "PostgreSQL over TLS (role "+StackMySQLTLSUser+")", err)
	}
	db.Close()
	return u.String(), opts
}

// WriteSecret writes a secret into a file of t's that only its owner can
// read, and returns the file's name.
func WriteSecret(t testing.TB, name, secret string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// Canary returns a distinctive secret for t: a test that uses it checks
// that it shows up nowhere.
func Canary(t testing.TB) string {
	t.Helper()
	return "canary-" + randomSuffix() + randomSuffix()
}

// CA is a certificate authority made for one test (not the stack's).
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate (PEM).
	File string
}

// NewCA makes a CA for t, valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, File: filepath.Join(t.TempDir(), "ca.pem")}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// CertOptions shape a certificate a CA issues.
type CertOptions struct {
	// CommonName is the subject's CN.
	CommonName string
	// Hosts are DNS names or IP addresses of a server certificate; none
	// makes a client certificate.
	Hosts []string
	// NotBefore and NotAfter default to an hour ago and a day from now.
	NotBefore, NotAfter time.Time
}

// Issue writes a certificate and its key (PEM, PKCS #8) into t's temporary
// directory and returns the two files.
func (ca *CA) Issue(t testing.TB, o CertOptions) (certFile, keyFile string) {
	t.Helper()
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: o.CommonName},
		NotBefore: o.NotBefore, NotAfter: o.NotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if len(o.Hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := strings.ReplaceAll(o.CommonName, " ", "_")
	certFile, keyFile = filepath.Join(dir, base+".pem"), filepath.Join(dir, base+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
