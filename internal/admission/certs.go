package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// keyPair is a certificate and its key in PEM, as a Secret keeps them.
type keyPair struct {
	Cert, Key []byte
}

// selfSigned generates a CA and a server certificate signed by it, valid for
// the hosts (DNS names or IPs), as Kopf's server does without certificate
// files: the API server trusts the CA through the webhooks' caBundle. The CA
// is separate from the server's certificate so that the bundle never holds
// a key-bearing leaf. It returns the server's key pair and the CA in PEM.
func selfSigned(hosts []string, now time.Time) (tls.Certificate, []byte, error) {
	const validity = 10 * 365 * 24 * time.Hour
	ca, err := newCA(now, validity)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := issue(ca, hosts, now, validity)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(leaf.Cert, leaf.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("cannot load the generated certificate: %w", err)
	}
	return cert, ca.Cert, nil
}

// newCA generates a CA valid from an hour ago (clock skew) for validity.
func newCA(now time.Time, validity time.Duration) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot generate the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kopfgo webhook CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot sign the CA: %w", err)
	}
	return encodePair(der, key)
}

// issue signs a server certificate for the hosts with the CA.
func issue(ca keyPair, hosts []string, now time.Time, validity time.Duration) (keyPair, error) {
	signer, err := tls.X509KeyPair(ca.Cert, ca.Key)
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot load the CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(signer.Certificate[0])
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot read the CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot generate the server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if tmpl.Subject.CommonName == "" {
			tmpl.Subject.CommonName = h
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, signer.PrivateKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot sign the server certificate: %w", err)
	}
	return encodePair(der, key)
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("cannot encode the key: %w", err)
	}
	return keyPair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// leafOf is the first certificate of a PEM chain, parsed.
func leafOf(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	return x509.ParseCertificate(block.Bytes)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
