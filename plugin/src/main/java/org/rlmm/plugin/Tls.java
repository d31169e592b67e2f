package org.rlmm.plugin;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Utils;

/**
 * The plugin's end of connect mode over TCP: the endpoint a {@link Wire} dials, with a JDK TLS
 * socket factory from PEM files (the CA that verifies rlmm serve, and the plugin's certificate and
 * PKCS#8 key when the server verifies clients) and the bearer token.
 */
final class Tls {
    private Tls() {}

    /** The endpoint of cfg for a plugin of the given version. */
    static Wire.Endpoint endpoint(PluginConfig cfg, int version) {
        if (cfg.mode != PluginConfig.Mode.TCP) {
            return new Wire.Endpoint(cfg.socket, null, 0, null, null, cfg.brokerId(), version);
        }
        Path tokenFile = cfg.path(PluginConfig.TOKEN_FILE);
        byte[] token = null;
        if (tokenFile != null) {
            try {
                token = Files.readString(tokenFile, StandardCharsets.UTF_8).trim().getBytes(StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new ConfigException(PluginConfig.TOKEN_FILE, tokenFile.toString(), "unreadable: " + e.getMessage());
            }
            if (token.length == 0) {
                throw new ConfigException(PluginConfig.TOKEN_FILE, tokenFile.toString(), "the file is empty");
            }
        }
        Path ca = cfg.path(PluginConfig.TLS_CA);
        Path cert = cfg.path(PluginConfig.TLS_CERT);
        SSLSocketFactory tls = null;
        if (ca != null || cert != null) {
            try {
                tls = factory(ca, cert, cfg.path(PluginConfig.TLS_KEY));
            } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
                throw new ConfigException(PluginConfig.TLS_CA, String.valueOf(ca), "the TLS files could not be loaded: " + e.getMessage());
            }
        }
        String address = cfg.string(PluginConfig.ADDRESS);
        return new Wire.Endpoint(null, Utils.getHost(address), Utils.getPort(address), tls, token, cfg.brokerId(), version);
    }

    private static SSLSocketFactory factory(Path ca, Path cert, Path key) throws IOException, GeneralSecurityException {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        TrustManagerFactory tmf = null;
        if (ca != null) {
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            int i = 0;
            for (Certificate c : certificates(cf, ca)) {
                trust.setCertificateEntry("ca" + i++, c);
            }
            tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
        }
        KeyManagerFactory kmf = null;
        if (cert != null) {
            KeyStore keys = KeyStore.getInstance(KeyStore.getDefaultType());
            keys.load(null, null);
            keys.setKeyEntry("plugin", privateKey(key), new char[0], certificates(cf, cert).toArray(new Certificate[0]));
            kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, new char[0]);
        }
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
        return ctx.getSocketFactory();
    }

    private static Collection<? extends Certificate> certificates(CertificateFactory cf, Path p)
            throws IOException, GeneralSecurityException {
        try (InputStream in = Files.newInputStream(p)) {
            return cf.generateCertificates(in);
        }
    }

    /** A PKCS#8 PEM key ("BEGIN PRIVATE KEY"), RSA or EC. */
    private static PrivateKey privateKey(Path p) throws IOException, GeneralSecurityException {
        String pem = Files.readString(p, StandardCharsets.US_ASCII);
        int b = pem.indexOf("-----BEGIN PRIVATE KEY-----");
        int e = pem.indexOf("-----END PRIVATE KEY-----");
        if (b < 0 || e < b) {
            throw new IllegalArgumentException(p + " holds no PKCS#8 key (-----BEGIN PRIVATE KEY-----)");
        }
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(b + 27, e));
        GeneralSecurityException last = null;
        for (String alg : new String[] {"RSA", "EC", "Ed25519"}) {
            try {
                return KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException x) {
                last = x;
            }
        }
        throw last;
    }
}
