//! Results databases for the store tests: a SQLite file, or a fresh database in a throwaway
//! PostgreSQL cluster that the first test needing one starts (initdb and pg_ctl in a temporary
//! folder, a Unix socket there and a free loopback port, password authentication; as the
//! `postgres` user when the tests run as root, since initdb refuses root). The cluster takes TLS
//! too, with a certificate for `localhost` and [`CERT_HOST`] from a CA made for it by the
//! `openssl` command; one role, [`TLS_ONLY_USER`], may log in over TLS only. A watchdog stops the
//! cluster and removes its folder when the test process ends, however it ends. Without the server
//! binaries the tests fail, naming the Debian package: they never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The variable the tests put the password in (`--password-env`, `password_env`).
pub(crate) const PASSWORD_ENV: &str = "GPASSK_TEST_PG_PASSWORD";
/// The cluster's password: no output of gpassk may ever hold it.
pub(crate) const PASSWORD: &str = "pw-Zq8-unshown-4417";
/// The superuser the cluster is made with.
const USER: &str = "gpassk";
/// A second superuser, whom pg_hba.conf lets in over TLS only (`hostnossl … reject`).
pub(crate) const TLS_ONLY_USER: &str = "gpassk_tls";
/// A name the server's certificate lists besides `localhost` (reached with `hostaddr=127.0.0.1`).
pub(crate) const CERT_HOST: &str = "db.gpassk.test";

/// A results database for a test.
#[derive(Debug, Clone)]
pub(crate) enum TestDb {
    Sqlite(PathBuf),
    /// A database of its own in the shared cluster.
    Postgres {
        name: String,
    },
}

impl TestDb {
    /// A SQLite file (created on first use) at `path`.
    pub(crate) fn sqlite(path: &Path) -> TestDb {
        TestDb::Sqlite(path.to_path_buf())
    }

    /// A new, empty database in the test cluster (started on first use).
    pub(crate) fn postgres() -> TestDb {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        admin("postgres").batch_execute(&format!("CREATE DATABASE {name}"));
        TestDb::Postgres { name }
    }

    /// Both kinds, for a test that must hold for each.
    pub(crate) fn both(sqlite_path: &Path) -> [TestDb; 2] {
        [TestDb::sqlite(sqlite_path), TestDb::postgres()]
    }

    /// Its `--db` URL (a PostgreSQL one on the cluster's Unix socket).
    pub(crate) fn url(&self) -> String {
        match self {
            TestDb::Sqlite(p) => format!("sqlite:{}", p.display()),
            TestDb::Postgres { name } => {
                let c = cluster();
                format!(
                    "postgres://{USER}@/{name}?host={}&port={}",
                    c.root.display(),
                    c.port
                )
            }
        }
    }

    /// The same database over TCP on the loopback address.
    pub(crate) fn tcp_url(&self) -> String {
        match self {
            TestDb::Sqlite(_) => self.url(),
            TestDb::Postgres { name } => {
                format!("postgres://{USER}@127.0.0.1:{}/{name}", cluster().port)
            }
        }
    }

    /// The database over TCP as `user`, to `host` (a name the certificate lists connects to
    /// 127.0.0.1 through `hostaddr`), with `query` (`sslmode=…`) appended.
    pub(crate) fn tls_url(&self, user: &str, host: &str, query: &str) -> String {
        let TestDb::Postgres { name } = self else {
            panic!("TLS is for PostgreSQL")
        };
        let port = cluster().port;
        let hostaddr = if host == CERT_HOST {
            "hostaddr=127.0.0.1&"
        } else {
            ""
        };
        format!("postgres://{user}@{host}:{port}/{name}?{hostaddr}{query}")
    }

    /// Adds the password variable to a command (harmless for SQLite).
    pub(crate) fn env<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command.env(PASSWORD_ENV, PASSWORD).env_remove("PGPASSWORD")
    }

    /// `gpassk ARGS --db URL [--password-env VAR]`, not yet run.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = super::gpassk();
        command.args(args).args(["--db", &self.url()]);
        if let TestDb::Postgres { .. } = self {
            command.args(["--password-env", PASSWORD_ENV]);
        }
        self.env(&mut command);
        command
    }

    /// Runs `gpassk ARGS --db URL …` to completion.
    pub(crate) fn run(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().expect("run gpassk")
    }

    /// The `[store]` table of a config pushing to this database.
    pub(crate) fn store_table(&self) -> String {
        match self {
            TestDb::Sqlite(_) => format!("[store]\nurl = \"{}\"\n", self.url()),
            TestDb::Postgres { .. } => format!(
                "[store]\nurl = \"{}\"\npassword_env = \"{PASSWORD_ENV}\"\n",
                self.url()
            ),
        }
    }

    /// Runs SQL in the database directly (the way another program would), statements only.
    pub(crate) fn execute(&self, sql: &str) {
        match self {
            TestDb::Sqlite(p) => rusqlite::Connection::open(p)
                .and_then(|c| c.execute_batch(sql))
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
            TestDb::Postgres { name } => admin(name).batch_execute(sql),
        }
    }

    /// The first column of a query's rows, as text (NULL as "NULL").
    pub(crate) fn column(&self, sql: &str) -> Vec<String> {
        match self {
            TestDb::Sqlite(p) => {
                let c = rusqlite::Connection::open(p).unwrap();
                let mut stmt = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                let rows = stmt
                    .query_map([], |r| {
                        Ok(match r.get_ref(0)? {
                            rusqlite::types::ValueRef::Null => "NULL".to_string(),
                            rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                            rusqlite::types::ValueRef::Real(x) => x.to_string(),
                            v => String::from_utf8_lossy(v.as_bytes().unwrap()).into_owned(),
                        })
                    })
                    .unwrap();
                rows.map(Result::unwrap).collect()
            }
            TestDb::Postgres { name } => admin(name).column(sql),
        }
    }

    /// The one value of a query, as text.
    pub(crate) fn value(&self, sql: &str) -> String {
        let mut rows = self.column(sql);
        assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
        rows.pop().unwrap()
    }
}

/// A client of the test cluster as its superuser, for set-up and checks.
pub(crate) struct Admin(postgres::Client);

/// Connects to database `db` of the cluster.
pub(crate) fn admin(db: &str) -> Admin {
    connect(cluster(), db)
}

/// The CA certificate (PEM) that signed the cluster's.
pub(crate) fn test_ca() -> PathBuf {
    cluster().root.join("tls/ca.crt")
}

fn connect(c: &Cluster, db: &str) -> Admin {
    let client = postgres::Config::new()
        .user(USER)
        .password(PASSWORD)
        .dbname(db)
        .host_path(&c.root)
        .port(c.port)
        .connect(postgres::NoTls)
        .unwrap_or_else(|e| panic!("test cluster, database {db}: {e}"));
    Admin(client)
}

impl Admin {
    pub(crate) fn batch_execute(&mut self, sql: &str) {
        self.0
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The first column of a query's rows as text (the query casts it: `…::text`).
    pub(crate) fn column(&mut self, sql: &str) -> Vec<String> {
        // The simple protocol gives every value as text, whatever its type.
        let messages = self
            .0
            .simple_query(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        messages
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) => {
                    Some(r.get(0).map_or("NULL".to_string(), str::to_string))
                }
                _ => None,
            })
            .collect()
    }
}

/// The running test cluster.
struct Cluster {
    /// Its folder: data, log, password file, and the Unix socket.
    root: PathBuf,
    port: u16,
}

fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(start)
}

/// The folder of initdb and pg_ctl: `GPASSK_TEST_PG_BIN` when it holds them, else the newest
/// Debian server's.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GPASSK_TEST_PG_BIN") {
        let dir = PathBuf::from(dir);
        if dir.join("initdb").exists() {
            return dir;
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "the PostgreSQL store tests need a PostgreSQL server (initdb, pg_ctl): install the \
             Debian package postgresql (apt-get install -y postgresql)"
        ),
    }
}

/// Who runs the server: the `postgres` user (uid, gid) when the tests run as root.
fn server_user() -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1);
    if me != 0 {
        return None;
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| {
                panic!("the tests run as root and initdb refuses root, but there is no `postgres` user (the Debian package postgresql creates it)")
            })
    };
    Some((id("-u"), id("-g")))
}

/// A server command (initdb, pg_ctl) as the server's user.
fn as_server(user: Option<(u32, u32)>, program: &Path) -> Command {
    match user {
        None => Command::new(program),
        Some(_) => {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        }
    }
}

fn start() -> Cluster {
    let bin = bin_dir();
    let user = server_user();
    let root = tempfile::Builder::new()
        .prefix("gpassk-pg-")
        .tempdir()
        .expect("temp dir")
        .keep();
    let data = root.join("data");
    let pwfile = root.join("pw");
    std::fs::write(&pwfile, PASSWORD).unwrap();
    if let Some((uid, gid)) = user {
        for p in [&root, &pwfile] {
            std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
        }
    }
    let out = as_server(user, &bin.join("initdb"))
        .args([
            "-D",
            data.to_str().unwrap(),
            "-U",
            USER,
            "--auth=scram-sha-256",
        ])
        .arg(format!("--pwfile={}", pwfile.display()))
        .args(["-E", "UTF8", "--no-locale", "--no-sync"])
        .output()
        .expect("run initdb");
    assert!(out.status.success(), "initdb: {}", super::both(&out));
    watchdog(user, &bin, &root);
    let tls = root.join("tls");
    std::fs::create_dir(&tls).unwrap();
    let ca = make_ca(&tls, "ca");
    let (cert, key) = make_server_cert(&tls, &ca);
    // The server refuses a key others may read; it reads it as its own user, whose watchdog
    // removes the folder.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    if let Some((uid, gid)) = user {
        for entry in std::fs::read_dir(&tls).unwrap() {
            std::os::unix::fs::chown(entry.unwrap().path(), Some(uid), Some(gid)).unwrap();
        }
        std::os::unix::fs::chown(&tls, Some(uid), Some(gid)).unwrap();
    }
    std::fs::write(
        data.join("pg_hba.conf"),
        format!(
            "local all all scram-sha-256\n\
             hostnossl all {TLS_ONLY_USER} 127.0.0.1/32 reject\n\
             host all all 127.0.0.1/32 scram-sha-256\n"
        ),
    )
    .unwrap();
    // A port found free can be taken before the server binds it: try a few.
    for _ in 0..5 {
        let port = free_port();
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={} \
             -c fsync=off -c max_connections=60 -c ssl=on -c ssl_cert_file={} \
             -c ssl_key_file={}",
            root.display(),
            cert.display(),
            key.display()
        );
        let started = as_server(user, &bin.join("pg_ctl"))
            .args([
                "-D",
                data.to_str().unwrap(),
                "-w",
                "-t",
                "60",
                "-o",
                &options,
            ])
            .arg("-l")
            .arg(root.join("log"))
            .arg("start")
            .stdout(Stdio::null())
            .status()
            .expect("run pg_ctl");
        if started.success() {
            // For the tests that open a store in this process (the CLI gets it per command).
            std::env::set_var(PASSWORD_ENV, PASSWORD);
            let cluster = Cluster { root, port };
            connect(&cluster, "postgres").batch_execute(&format!(
                "CREATE ROLE {TLS_ONLY_USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'"
            ));
            return cluster;
        }
    }
    let log = std::fs::read_to_string(root.join("log")).unwrap_or_default();
    panic!("the test PostgreSQL server did not start:\n{log}");
}

/// Runs `openssl ARGS` in `dir` (the words of `args`: no file name here has a space).
fn openssl(dir: &Path, args: &str) {
    let out = Command::new("openssl")
        .args(args.split_whitespace())
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("the TLS store tests need the openssl command (Debian package openssl): {e}")
        });
    assert!(
        out.status.success(),
        "openssl {args}: {}",
        super::both(&out)
    );
}

/// P-256 keys: quick to make, and what rustls and the server both take.
const NEW_KEY: &str = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

/// A new CA in `dir`: `NAME.crt` and `NAME.key`, valid 30 days; the certificate's path.
pub(crate) fn make_ca(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &format!(
            "req -x509 -new {NEW_KEY} -keyout {name}.key -out {name}.crt -days 30 \
             -subj /CN=gpassk-test-{name} -addext basicConstraints=critical,CA:TRUE \
             -addext keyUsage=critical,keyCertSign,cRLSign"
        ),
    );
    dir.join(format!("{name}.crt"))
}

/// The server's certificate and key, signed by the CA `ca` (its key beside it), for
/// `localhost` and [`CERT_HOST`] only: not for 127.0.0.1.
fn make_server_cert(dir: &Path, ca: &Path) -> (PathBuf, PathBuf) {
    std::fs::write(
        dir.join("server.ext"),
        format!(
            "subjectAltName=DNS:localhost,DNS:{CERT_HOST}\n\
             basicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\n"
        ),
    )
    .unwrap();
    openssl(
        dir,
        &format!("req -new {NEW_KEY} -keyout server.key -out server.csr -subj /CN=localhost"),
    );
    openssl(
        dir,
        &format!(
            "x509 -req -in server.csr -CA {} -CAkey {} -CAcreateserial -days 30 \
             -out server.crt -extfile server.ext",
            ca.display(),
            ca.with_extension("key").display()
        ),
    );
    (dir.join("server.crt"), dir.join("server.key"))
}

/// Stops the cluster and removes its folder once this test process is gone.
fn watchdog(user: Option<(u32, u32)>, bin: &Path, root: &Path) {
    let script = format!(
        "while [ -d /proc/{pid} ]; do sleep 1; done; \
         '{pg_ctl}' -D '{root}/data' stop -m immediate >/dev/null 2>&1; rm -rf '{root}'",
        pid = std::process::id(),
        pg_ctl = bin.join("pg_ctl").display(),
        root = root.display()
    );
    let mut c = Command::new("setsid");
    c.arg("-f");
    if user.is_some() {
        c.args(["runuser", "-u", "postgres", "--"]);
    }
    c.args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("start the cluster's watchdog");
}

/// A loopback port nothing listens on (now).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
