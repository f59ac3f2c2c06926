//! `gpassk store` over TLS to the real test cluster: each sslmode's checks (the CA, the host
//! name), the default of each kind of host, a server that takes TLS logins only, and
//! `sslrootcert` files that cannot be used; every failure one line, exit 2, never the password.

use crate::common::db::{
    make_ca, test_ca, TestDb, CERT_HOST, PASSWORD, PASSWORD_ENV, TLS_ONLY_USER,
};
use crate::common::{both, stdout};
use crate::store::{finished_run, refused};
use std::path::Path;
use std::process::Output;

/// `gpassk ARGS --db URL` with the password in its variable.
fn with_db(url: &str, args: &[&str]) -> Output {
    crate::common::gpassk()
        .args(args)
        .args(["--db", url, "--password-env", PASSWORD_ENV])
        .env(PASSWORD_ENV, PASSWORD)
        .env_remove("PGPASSWORD")
        .output()
        .unwrap()
}

fn ok(url: &str, args: &[&str]) -> Output {
    let out = with_db(url, args);
    assert_eq!(out.status.code(), Some(0), "{url}: {}", both(&out));
    assert!(!both(&out).contains(PASSWORD), "{}", both(&out));
    out
}

/// `gpassk store ls --db URL` is refused: exit 2, one line saying `says`, never the password.
fn refused_ls(url: &str, says: &str) {
    refused(
        &["store", "ls", "--db", url, "--password-env", PASSWORD_ENV],
        PASSWORD,
        says,
    );
}

fn ca_query(mode: &str, ca: &Path) -> String {
    format!("sslmode={mode}&sslrootcert={}", ca.display())
}

#[test]
fn verify_full_with_the_servers_ca_and_name_pushes_and_reads_back() {
    let env = finished_run();
    let dir = env.run_dir();
    let db = TestDb::postgres();
    let query = ca_query("verify-full", &test_ca());
    // The TLS-only role: its login succeeding is the proof the connection was encrypted.
    let by_name = db.tls_url(TLS_ONLY_USER, CERT_HOST, &query);
    let out = ok(&by_name, &["store", "push", dir.to_str().unwrap()]);
    assert!(stdout(&out).contains(": pushed in "), "{}", both(&out));
    let localhost = db.tls_url(TLS_ONLY_USER, "localhost", &query);
    let ls = stdout(&ok(&localhost, &["store", "ls"]));
    assert!(ls.contains("complete") && ls.contains("2 models"), "{ls}");
    let runs = stdout(&ok(&by_name, &["store", "export", "runs"]));
    assert_eq!(runs.lines().count(), 2, "{runs}");
    // The same rows over the Unix socket, where TLS does not apply.
    assert_eq!(db.value("SELECT COUNT(*)::text FROM runs"), "1");
}

#[test]
fn verify_full_refuses_a_certificate_for_another_name_or_from_another_ca() {
    let db = TestDb::postgres();
    let ca = test_ca();
    // The certificate names localhost and CERT_HOST, not the address.
    let by_address = db.tls_url(TLS_ONLY_USER, "127.0.0.1", &ca_query("verify-full", &ca));
    refused_ls(&by_address, "certificate not valid for name \"127.0.0.1\"");
    let out = with_db(&by_address, &["store", "ls"]);
    assert!(
        both(&out).contains("checks that the certificate names the host connected to"),
        "{}",
        both(&out)
    );
    // verify-ca checks the CA alone: the same address passes.
    ok(
        &db.tls_url(TLS_ONLY_USER, "127.0.0.1", &ca_query("verify-ca", &ca)),
        &["store", "ls"],
    );

    let other = tempfile::tempdir().unwrap();
    let other_ca = make_ca(other.path(), "other");
    for mode in ["verify-full", "verify-ca"] {
        let url = db.tls_url(TLS_ONLY_USER, "localhost", &ca_query(mode, &other_ca));
        refused_ls(
            &url,
            &format!(
                "sslmode={mode} checks that the certificate is signed by the CA of \
                 sslrootcert {}",
                other_ca.display()
            ),
        );
    }
    // Without sslrootcert, the public roots: a private CA's certificate is refused.
    let url = db.tls_url(TLS_ONLY_USER, "localhost", "sslmode=verify-full");
    refused_ls(&url, "name the server's CA with sslrootcert=PATH");
    // require with a CA named checks the chain, as libpq does.
    let url = db.tls_url(TLS_ONLY_USER, "127.0.0.1", &ca_query("require", &other_ca));
    refused_ls(&url, "UnknownIssuer");
}

#[test]
fn require_encrypts_without_a_ca_and_the_default_is_verify_full_for_remote_names_only() {
    let db = TestDb::postgres();
    // require and prefer: encrypted (the TLS-only role gets in), no certificate checked.
    for mode in ["require", "prefer"] {
        for host in ["127.0.0.1", CERT_HOST] {
            let url = db.tls_url(TLS_ONLY_USER, host, &format!("sslmode={mode}"));
            ok(&url, &["store", "ls"]);
        }
    }
    // No sslmode and a name that is not this machine's: verify-full. The test CA is no public
    // one, so the certificate is refused, saying the mode was the default.
    let remote = db.tls_url(TLS_ONLY_USER, CERT_HOST, "");
    refused_ls(
        &remote,
        "sslmode=verify-full (the default off this machine) checks that a public CA signed",
    );
    // With the CA named (and no sslmode), the same name passes, and a name the certificate does
    // not list is refused: the host is checked by default too.
    let sslrootcert = format!("sslrootcert={}", test_ca().display());
    ok(
        &db.tls_url(TLS_ONLY_USER, CERT_HOST, &sslrootcert),
        &["store", "ls"],
    );
    let by_address = db.tls_url(TLS_ONLY_USER, "127.0.0.1", &sslrootcert);
    refused_ls(&by_address, "certificate not valid for name \"127.0.0.1\"");
    // No sslmode on the loopback address: plaintext, as before TLS was built in, so the
    // TLS-only role is turned away and the other role gets in.
    let loopback = db.tls_url(TLS_ONLY_USER, "127.0.0.1", "");
    refused_ls(&loopback, "no encryption");
    ok(&db.tcp_url(), &["store", "ls"]);
    ok(&db.url(), &["store", "ls"]);
    // sslmode=disable against a server that takes this login over TLS only: one line saying
    // what to change.
    let disable = db.tls_url(TLS_ONLY_USER, CERT_HOST, "sslmode=disable");
    refused_ls(
        &disable,
        "the server may take TLS connections only: set sslmode=verify-full",
    );
}

#[test]
fn unusable_sslrootcert_files_and_sslmodes_are_one_line_errors_naming_them() {
    let db = TestDb::postgres();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let ca_text = std::fs::read_to_string(test_ca()).unwrap();
    let body_start = ca_text.find('\n').unwrap() + 1;
    let mut broken = ca_text.clone();
    broken.replace_range(body_start..body_start + 8, "!!!!!!!!");
    let key = test_ca().with_extension("key");
    let cases = [
        (dir.path().join("missing.pem"), "cannot read"),
        (dir.path().to_path_buf(), "not a regular file"),
        (write("empty.pem", ""), "no PEM certificate"),
        (
            write("text.pem", "not a certificate\n"),
            "no PEM certificate",
        ),
        (key, "no PEM certificate"),
        (write("broken.pem", &broken), "certificate 1: not PEM"),
        (
            write(
                "garbage.pem",
                "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcI\n-----END CERTIFICATE-----\n",
            ),
            "certificate 1: not a CA gpassk can use",
        ),
    ];
    for (path, says) in cases {
        let url = db.tls_url(TLS_ONLY_USER, "localhost", &ca_query("verify-full", &path));
        refused_ls(&url, &format!("sslrootcert {}: ", path.display()));
        refused_ls(&url, says);
    }
    for (query, says) in [
        (
            "sslmode=verify",
            "sslmode=verify: expected disable, prefer, require",
        ),
        (
            "sslmode=allow",
            "sslmode=allow: gpassk never tries plaintext first",
        ),
        ("sslcert=me.pem", "unknown parameter `sslcert`"),
    ] {
        let url = db.tls_url(TLS_ONLY_USER, "localhost", query);
        refused_ls(&url, says);
    }
}
