package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for any local session; every cluster gets a new CA anyway.
const certValidity = 7 * 24 * time.Hour

// pki is the certificate authority of one local cluster. It signs the serving certificates of the
// components and the client certificates they and the admin use, and holds the service account key.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	// caPEM is the CA certificate, for kubeconfigs and clients.
	caPEM []byte
	// caCertFile and caKeyFile hold the CA, for --client-ca-file, --root-ca-file and CSR signing.
	caCertFile, caKeyFile string
	// serviceAccountKeyFile signs and verifies service account tokens.
	serviceAccountKeyFile string
}

// keyPair is a certificate and its private key, both in memory and in files.
type keyPair struct {
	certPEM, keyPEM   []byte
	certFile, keyFile string
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating certificate folder, %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key, %w", err)
	}
	tmpl, err := certTemplate(pkix.Name{CommonName: "lathe-local-ca"})
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate, %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate, %w", err)
	}
	p := &pki{dir: dir, caCert: cert, caKey: key}
	ca, err := p.write("ca", der, key)
	if err != nil {
		return nil, err
	}
	p.caPEM, p.caCertFile, p.caKeyFile = ca.certPEM, ca.certFile, ca.keyFile
	if p.serviceAccountKeyFile, err = p.newServiceAccountKey(); err != nil {
		return nil, err
	}
	return p, nil
}

// serving issues a TLS server certificate for the given DNS names and IP addresses.
func (p *pki) serving(name string, hosts ...string) (keyPair, error) {
	tmpl, err := certTemplate(pkix.Name{CommonName: name})
	if err != nil {
		return keyPair{}, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return p.issue(name+"-serving", tmpl)
}

// client issues a client certificate; Kubernetes reads the user name from the common name and the
// groups from the organizations.
func (p *pki) client(name, user string, groups ...string) (keyPair, error) {
	tmpl, err := certTemplate(pkix.Name{CommonName: user, Organization: groups})
	if err != nil {
		return keyPair{}, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return p.issue(name+"-client", tmpl)
}

func (p *pki) issue(name string, tmpl *x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating %s key, %w", name, err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing %s certificate, %w", name, err)
	}
	return p.write(name, der, key)
}

// newServiceAccountKey writes the key kube-apiserver signs service account tokens with and
// kube-controller-manager signs the legacy token secrets with.
func (p *pki) newServiceAccountKey() (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generating service account key, %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return "", err
	}
	file := filepath.Join(p.dir, "service-account.key")
	if err := os.WriteFile(file, keyPEM, 0o600); err != nil {
		return "", fmt.Errorf("writing service account key, %w", err)
	}
	return file, nil
}

func (p *pki) write(name string, der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	kp := keyPair{
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:   keyPEM,
		certFile: filepath.Join(p.dir, name+".crt"),
		keyFile:  filepath.Join(p.dir, name+".key"),
	}
	if err := os.WriteFile(kp.certFile, kp.certPEM, 0o600); err != nil {
		return keyPair{}, fmt.Errorf("writing %s certificate, %w", name, err)
	}
	if err := os.WriteFile(kp.keyFile, kp.keyPEM, 0o600); err != nil {
		return keyPair{}, fmt.Errorf("writing %s key, %w", name, err)
	}
	return kp, nil
}

// encodeKey uses the SEC 1 "EC PRIVATE KEY" form, which every Kubernetes key flag accepts.
func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key, %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func certTemplate(subject pkix.Name) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating certificate serial number, %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour), // tolerate small clock differences
		NotAfter:     now.Add(certValidity),
	}, nil
}
