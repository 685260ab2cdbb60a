package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 keys (RFC 5958 / RFC 8018 PBES2) are what OpenSSL 3 writes for
// `openssl genrsa -aes256` and `openssl genpkey -aes256`, so tls-key-file-pass must read
// them; Go's crypto/x509 has no decoder for them. Only PBES2 with PBKDF2 and AES-CBC, what
// OpenSSL uses by default, is supported; anything else is refused with a message naming it.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt      []byte
	Iter      int
	KeyLength int                      `asn1:"optional"`
	PRF       pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 returns the PKCS#8 DER of an encrypted PKCS#8 key.
func decryptPKCS8(der []byte, pass string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("malformed encrypted key: %v", err)
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("unsupported key encryption %v (only PBES2 is supported)", info.Algo.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("malformed PBES2 parameters: %v", err)
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("unsupported key derivation %v (only PBKDF2 is supported)", p.KDF.Algorithm)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kp); err != nil {
		return nil, fmt.Errorf("malformed PBKDF2 parameters: %v", err)
	}
	var keyLen int
	switch {
	case p.Scheme.Algorithm.Equal(oidAES128CBC):
		keyLen = 16
	case p.Scheme.Algorithm.Equal(oidAES192CBC):
		keyLen = 24
	case p.Scheme.Algorithm.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("unsupported key cipher %v (only AES-CBC is supported)", p.Scheme.Algorithm)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Scheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("malformed AES-CBC parameters")
	}
	if kp.Iter < 1 || kp.Iter > 1<<24 {
		return nil, fmt.Errorf("unreasonable PBKDF2 iteration count %d", kp.Iter)
	}
	var prf func() hash.Hash
	switch alg := kp.PRF.Algorithm; {
	case len(alg) == 0 || alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA384):
		prf = sha512.New384
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("unsupported PBKDF2 PRF %v", alg)
	}
	key, err := pbkdf2.Key(prf, pass, kp.Salt, kp.Iter, keyLen)
	if err != nil {
		return nil, err
	}
	if len(info.Data) == 0 || len(info.Data)%aes.BlockSize != 0 {
		return nil, errors.New("malformed encrypted key data")
	}
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; a wrong password almost always shows here.
	n := int(out[len(out)-1])
	if n == 0 || n > aes.BlockSize {
		return nil, errors.New("cannot decrypt the key with tls-key-file-pass (wrong passphrase?)")
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, errors.New("cannot decrypt the key with tls-key-file-pass (wrong passphrase?)")
		}
	}
	plain := out[:len(out)-n]
	// Padding that happens to look valid under a wrong passphrase leaves garbage: check
	// that a key came out, so the error names the key and not the certificate.
	if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, errors.New("cannot decrypt the key with tls-key-file-pass (wrong passphrase?)")
	}
	return plain, nil
}
