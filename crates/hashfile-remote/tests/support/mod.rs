//! Real servers for the remote tests, each started on a free loopback port
//! and stopped when dropped: nginx serving a temporary directory (its
//! access log records the connection serial number of every request), a
//! byte-relaying fault proxy in front of it, and MinIO.
#![allow(dead_code)]

/// Skipping a test whose environment is missing, or failing it when a
/// `HASHFILE_REQUIRE_*` variable requires the environment (`require_env!`).
#[path = "../../../hashfile/tests/support/environment.rs"]
pub mod environment;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hashfile::{BuildOptions, Builder};

/// A free port on 127.0.0.1 (the listener is closed again at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_until_listening(port: u16, what: &str, child: &mut Child, log: &Path) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{what} exited with {status}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} did not listen on {port}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// A store of `n` entries `key-I` => `value-I` padded to `value_len`
/// bytes, as bytes, and the value of key `i`.
pub fn store(n: u64, value_len: usize) -> Vec<u8> {
    store_with(n, value_len, BuildOptions::default())
}

/// `store` built with `options`.
#[allow(dead_code)] // not every test file that includes support uses it
pub fn store_with(n: u64, value_len: usize, options: BuildOptions) -> Vec<u8> {
    let mut builder = Builder::new(options).unwrap();
    for i in 0..n {
        builder.insert(format!("key-{i}").as_bytes(), &value(i, value_len));
    }
    builder.to_bytes().unwrap()
}

pub fn value(i: u64, value_len: usize) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(value_len.max(v.len()), b'.');
    v
}

/// Reads every `step`th key of a `store(n, value_len)` through `remote`,
/// one lookup each, and checks its value, then that a key it lacks is
/// absent.
pub fn assert_reads_every_nth_key(
    remote: &hashfile_remote::RemoteReader,
    n: u64,
    step: usize,
    value_len: usize,
) {
    for i in (0..n).step_by(step) {
        let found = remote.get(format!("key-{i}").as_bytes()).unwrap();
        assert_eq!(
            found.unwrap_or_else(|| panic!("key-{i} missing")).value(),
            value(i, value_len),
            "key-{i}"
        );
    }
    assert!(remote.get(b"absent").unwrap().is_none());
}

/// A batch of 100 keys of a `store(n, value_len)` through `remote`: every
/// value right, in at most 4 round trips, as many as one lookup takes.
pub fn assert_a_batch_takes_one_lookups_round_trips(
    remote: &hashfile_remote::RemoteReader,
    n: u64,
    value_len: usize,
) {
    let keys: Vec<String> = (0..100u64)
        .map(|i| format!("key-{}", i * 1999 % n))
        .collect();
    let before = remote.source().stats().fetches;
    let found = remote.get_many(&keys).unwrap();
    let trips = remote.source().stats().fetches - before;
    assert!(trips <= 4, "{trips} round trips for 100 keys");
    for (i, record) in (0..100u64).zip(&found) {
        assert_eq!(
            record.as_ref().unwrap().value(),
            value(i * 1999 % n, value_len)
        );
    }
}

/// nginx serving `root()` at `/files/`, with fault locations.
pub struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
    /// A second server block on its own port speaking HTTP/2 without TLS
    /// (h2c, prior knowledge).
    pub h2_port: u16,
}

impl Nginx {
    pub fn start() -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("files")).unwrap();
        let port = free_port();
        let h2_port = free_port();
        // One template for these tests and the Ruby ones.
        let config = include_str!("../../../../test/support/nginx.conf")
            .replace("@DIR@", &dir.path().display().to_string())
            .replace("@ROOT@", &root.display().to_string())
            .replace("@H2_PORT@", &h2_port.to_string())
            .replace("@PORT@", &port.to_string());
        std::fs::write(dir.path().join("nginx.conf"), config).unwrap();
        let log = dir.path().join("error.log");
        let mut child = Command::new("nginx")
            .args([
                "-p",
                &dir.path().display().to_string(),
                "-c",
                &dir.path().join("nginx.conf").display().to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx (Debian package nginx-light; bin/setup installs it)");
        wait_until_listening(port, "nginx", &mut child, &log);
        Nginx {
            child,
            dir,
            port,
            h2_port,
        }
    }

    /// Where `/files/NAME` is read from.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join("root/files").join(name)
    }

    /// Publishes `bytes` as `/files/NAME` by rename, with the modification
    /// time of the file it replaces (as `cp -p`, `rsync -a` or a build
    /// within the same second leave it): nginx's ETag (time and length)
    /// and Last-Modified stay the same when the length does.
    pub fn publish_keeping_mtime(&self, name: &str, bytes: &[u8]) {
        let mtime = std::fs::metadata(self.file(name))
            .unwrap()
            .modified()
            .unwrap();
        let temp = self.dir.path().join("root").join(format!(".{name}.tmp"));
        std::fs::write(&temp, bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&temp)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        std::fs::rename(&temp, self.file(name)).unwrap();
    }

    /// Publishes `bytes` as `/files/NAME` by rename, as a build does.
    pub fn publish(&self, name: &str, bytes: &[u8]) {
        let temp = self.dir.path().join("root").join(format!(".{name}.tmp"));
        std::fs::write(&temp, bytes).unwrap();
        std::fs::rename(&temp, self.file(name)).unwrap();
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The access log's lines so far: (connection, request on it, status,
    /// URI, Range).
    ///
    /// nginx writes a request's line once it has finalized the request,
    /// which may be just after the client has its answer: the log is read
    /// again until it has not grown for 30 ms.
    pub fn log(&self) -> Vec<(u64, u64, u16, String, String)> {
        let path = self.dir.path().join("access.log");
        let read = || std::fs::read_to_string(&path).unwrap_or_default();
        let mut text = read();
        loop {
            thread::sleep(Duration::from_millis(30));
            let again = read();
            if again.len() == text.len() {
                break;
            }
            text = again;
        }
        text.lines()
            .map(|line| {
                let mut parts = line.splitn(4, ' ');
                let connection = parts.next().unwrap().parse().unwrap();
                let number = parts.next().unwrap().parse().unwrap();
                let status = parts.next().unwrap().parse().unwrap();
                let rest = parts.next().unwrap();
                let quoted: Vec<&str> = rest.split('"').collect();
                (
                    connection,
                    number,
                    status,
                    quoted[1].to_owned(),
                    quoted[3].to_owned(),
                )
            })
            .collect()
    }

    /// The URI and the Authorization header (empty if none) of every
    /// request logged so far.
    pub fn authorizations(&self) -> Vec<(String, String)> {
        let path = self.dir.path().join("access.log");
        self.log();
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let quoted: Vec<&str> = line.split('"').collect();
                let auth = quoted.get(5).copied().unwrap_or_default();
                (quoted[1].to_owned(), auth.trim_matches('-').to_owned())
            })
            .collect()
    }

    /// Requests logged since `since` lines, and the distinct connections
    /// they came on.
    pub fn count_since(&self, since: usize) -> (usize, usize) {
        let log = self.log();
        let new = &log[since.min(log.len())..];
        let mut connections: Vec<u64> = new.iter().map(|l| l.0).collect();
        connections.sort_unstable();
        connections.dedup();
        (new.len(), connections.len())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the fault proxy does to the connections it relays.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Of the first this-many connections, each is reset (RST) after
    /// relaying `reset_after` bytes of response.
    pub reset_connections: usize,
    pub reset_after: usize,
    /// Every connection is closed cleanly (FIN) after this many bytes of
    /// response: bodies end early.
    pub truncate_after: Option<usize>,
    /// Wait before relaying each request to the server (at start; see
    /// `FaultProxy::set_latency`).
    pub latency: Duration,
}

/// A TCP proxy in front of a server that relays bytes both ways and
/// injects faults; it knows nothing of HTTP.
pub struct FaultProxy {
    pub port: u16,
    stop: Arc<AtomicBool>,
    pub connections: Arc<AtomicUsize>,
    /// The hold on each request, in milliseconds, changeable while running.
    latency_ms: Arc<AtomicU64>,
}

impl FaultProxy {
    pub fn start(upstream: u16, faults: Faults) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let latency_ms = Arc::new(AtomicU64::new(faults.latency.as_millis() as u64));
        let (stop_accepting, counted, latency) = (
            Arc::clone(&stop),
            Arc::clone(&connections),
            Arc::clone(&latency_ms),
        );
        thread::spawn(move || {
            while !stop_accepting.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let number = counted.fetch_add(1, Ordering::SeqCst);
                        let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                        relay(
                            client,
                            server,
                            faults,
                            number < faults.reset_connections,
                            Arc::clone(&latency),
                        );
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        FaultProxy {
            port,
            stop,
            connections,
            latency_ms,
        }
    }

    /// Holds each request this long from now on.
    pub fn set_latency(&self, latency: Duration) {
        self.latency_ms
            .store(latency.as_millis() as u64, Ordering::SeqCst);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn relay(
    client: TcpStream,
    server: TcpStream,
    faults: Faults,
    reset: bool,
    latency: Arc<AtomicU64>,
) {
    let (mut client_in, mut server_out) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    thread::spawn(move || {
        let mut buf = [0u8; 16 << 10];
        loop {
            match client_in.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    thread::sleep(Duration::from_millis(latency.load(Ordering::SeqCst)));
                    if server_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = server_out.shutdown(Shutdown::Write);
    });
    let (mut server_in, mut client_out) = (server, client);
    thread::spawn(move || {
        let mut buf = [0u8; 16 << 10];
        let mut sent = 0usize;
        let limit = if reset {
            Some(faults.reset_after)
        } else {
            faults.truncate_after
        };
        loop {
            let n = match server_in.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let take = limit.map_or(n, |limit| n.min(limit - sent));
            if client_out.write_all(&buf[..take]).is_err() {
                break;
            }
            sent += take;
            if limit == Some(sent) {
                break;
            }
        }
        let _ = server_in.shutdown(Shutdown::Both);
        if reset {
            // RST on the last close: this thread's handle now, the other
            // thread's once its read, woken by the shutdown, returns.
            set_linger_zero(&client_out);
            let _ = client_out.shutdown(Shutdown::Read);
        } else {
            let _ = client_out.shutdown(Shutdown::Both);
        }
    });
}

/// Closing with SO_LINGER 0 sends RST instead of FIN.
fn set_linger_zero(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = [1i32, 0i32]; // struct linger { l_onoff = 1, l_linger = 0 }
                               // SAFETY: setsockopt reads `size_of_val(&linger)` bytes from a live
                               // array of two c_ints, which is struct linger's layout; the descriptor
                               // belongs to `stream`, which outlives the call.
    unsafe {
        libc_setsockopt(
            stream.as_raw_fd(),
            1,  /* SOL_SOCKET */
            13, /* SO_LINGER */
            linger.as_ptr().cast(),
            std::mem::size_of_val(&linger) as u32,
        );
    }
}

extern "C" {
    #[link_name = "setsockopt"]
    fn libc_setsockopt(
        fd: i32,
        level: i32,
        name: i32,
        value: *const std::ffi::c_void,
        len: u32,
    ) -> i32;
}

/// MinIO, a real S3-compatible server, on a free port with a temporary
/// data directory. Its binary is `$HASHFILE_MINIO`, or
/// `~/.cache/hashfile/bin/minio` where `bin/setup` builds it.
pub struct Minio {
    child: Child,
    _dir: tempfile::TempDir,
    pub endpoint: String,
}

/// MinIO's environment for the tests (`NAME=value` lines), shared with
/// the Ruby tests.
const MINIO_ENV: &str = include_str!("../../../../test/support/minio.env");

/// A setting of `MINIO_ENV` (`MINIO_ROOT_USER`, `MINIO_REGION`, ...).
pub fn minio_setting(name: &str) -> &'static str {
    minio_env()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("{name} is not in test/support/minio.env"))
}

fn minio_env() -> impl Iterator<Item = (&'static str, &'static str)> {
    MINIO_ENV
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('='))
}

impl Minio {
    pub fn binary() -> PathBuf {
        std::env::var_os("HASHFILE_MINIO")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/hashfile/bin/minio")
            })
    }

    /// MinIO started, or `None` (with a SKIP line on stderr) when its
    /// binary is missing: a machine without Go has none. With
    /// `HASHFILE_REQUIRE_MINIO=1`, as in CI, a missing binary fails instead
    /// ([`environment::present`]).
    #[track_caller]
    pub fn start_or_skip() -> Option<Minio> {
        let binary = Minio::binary();
        let missing = format!(
            "MinIO is not at {} (bin/setup --minio builds it with Go)",
            binary.display()
        );
        environment::present("HASHFILE_REQUIRE_MINIO", binary.exists(), &missing).then(Minio::start)
    }

    pub fn start() -> Minio {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let console = free_port();
        let log = dir.path().join("minio.log");
        let binary = Minio::binary();
        assert!(
            binary.exists(),
            "MinIO is not at {} (bin/setup builds it with go install)",
            binary.display()
        );
        let mut child = Command::new(&binary)
            .args([
                "server",
                &dir.path().join("data").display().to_string(),
                "--address",
                &format!("127.0.0.1:{port}"),
                "--console-address",
                &format!("127.0.0.1:{console}"),
                "--quiet",
            ])
            .envs(minio_env())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until_listening(port, "minio", &mut child, &log);
        let endpoint = format!("http://127.0.0.1:{port}");
        // Listening comes before serving: wait for the health check.
        let start = Instant::now();
        loop {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream.write_all(b"GET /minio/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
            let mut answer = String::new();
            let _ = stream.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "minio is not healthy: {answer}"
            );
            thread::sleep(Duration::from_millis(100));
        }
        Minio {
            child,
            _dir: dir,
            endpoint,
        }
    }
}

impl Minio {
    /// Options that reach this server as its root user.
    pub fn options(&self) -> hashfile_remote::RemoteOptions {
        hashfile_remote::RemoteOptions {
            s3_endpoint: Some(self.endpoint.clone()),
            s3_region: Some(minio_setting("MINIO_REGION").into()),
            s3_credentials: Some((
                minio_setting("MINIO_ROOT_USER").into(),
                minio_setting("MINIO_ROOT_PASSWORD").into(),
            )),
            ..hashfile_remote::RemoteOptions::default()
        }
    }

    /// An S3 client of MinIO's, for setting up what the tests read.
    pub fn client(&self, bucket: &str) -> object_store::aws::AmazonS3 {
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_region(minio_setting("MINIO_REGION"))
            .with_bucket_name(bucket)
            .with_access_key_id(minio_setting("MINIO_ROOT_USER"))
            .with_secret_access_key(minio_setting("MINIO_ROOT_PASSWORD"))
            .build()
            .unwrap()
    }

    /// Uploads with object_store itself (MinIO's own client is not here).
    pub fn put(&self, bucket: &str, key: &str, bytes: Vec<u8>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(object_store::ObjectStoreExt::put(
                &self.client(bucket),
                &object_store::path::Path::from(key),
                object_store::PutPayload::from(bytes),
            ))
            .unwrap();
    }

    /// The names of the objects in `bucket` under `prefix`, sorted.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        use futures_util::StreamExt;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store = self.client(bucket);
        let mut names: Vec<String> = runtime.block_on(async {
            let prefix = object_store::path::Path::from(prefix);
            object_store::ObjectStore::list(&store, Some(&prefix))
                .map(|meta| meta.unwrap().location.to_string())
                .collect()
                .await
        });
        names.sort();
        names
    }

    /// Makes a bucket: a PUT of the bucket's path, presigned by object_store
    /// (which has no call for making buckets).
    pub fn make_bucket(&self, bucket: &str) {
        use object_store::signer::Signer;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store = self.client(bucket);
        // MinIO may answer 503 for a moment after its health check passes.
        runtime.block_on(async {
            let mut last = String::new();
            for _ in 0..50 {
                let url = store
                    .signed_url(
                        reqwest::Method::PUT,
                        &object_store::path::Path::from(""),
                        std::time::Duration::from_secs(60),
                    )
                    .await
                    .unwrap();
                match reqwest::Client::new().put(url.clone()).send().await {
                    Ok(response) if response.status().is_success() => return,
                    Ok(response) => {
                        last = format!(
                            "PUT {url}: {}: {}",
                            response.status(),
                            response.text().await.unwrap_or_default()
                        )
                    }
                    Err(error) => last = format!("PUT {url}: {error}"),
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            panic!("cannot make bucket {bucket}: {last}");
        });
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server on loopback that answers every request with `answer(request
/// number)` and then `body_len` bytes of zeros (cut short when the client
/// hangs up); counts the body bytes it managed to send.
pub struct Liar {
    pub port: u16,
    pub sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Liar {
    pub fn start(answer: impl Fn(usize) -> String + Send + Sync + 'static, body_len: u64) -> Liar {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (sent, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (counter, stopping) = (Arc::clone(&sent), Arc::clone(&stop));
        let answer = Arc::new(answer);
        thread::spawn(move || {
            let served = AtomicUsize::new(0);
            for client in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(mut client) = client else { continue };
                let (counter, answer) = (Arc::clone(&counter), Arc::clone(&answer));
                let n = served.fetch_add(1, Ordering::Relaxed);
                thread::spawn(move || {
                    let mut request = [0u8; 8192];
                    let _ = client.set_read_timeout(Some(Duration::from_secs(5)));
                    let _ = client.read(&mut request);
                    if client.write_all(answer(n).as_bytes()).is_err() {
                        return;
                    }
                    let zeros = vec![0u8; 1 << 16];
                    let mut left = body_len;
                    while left > 0 {
                        let take = left.min(zeros.len() as u64) as usize;
                        match client.write(&zeros[..take]) {
                            Ok(0) | Err(_) => break,
                            Ok(written) => {
                                counter.fetch_add(written as u64, Ordering::Relaxed);
                                left -= written as u64;
                            }
                        }
                    }
                    let _ = client.shutdown(Shutdown::Both);
                });
            }
        });
        Liar { port, sent, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/s.hf", self.port)
    }
}

impl Drop for Liar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A server that serves `bytes` for GETs with a Range header, answering a
/// multi-range request with one part spanning from the first range's
/// start to the last one's end (RFC 9110 lets a server coalesce ranges;
/// this one does it across any gap). Counts the requests it answered.
pub struct Coalescing {
    pub port: u16,
    pub requests: Arc<AtomicUsize>,
}

impl Coalescing {
    pub fn start(bytes: Vec<u8>) -> Coalescing {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let (counter, bytes) = (Arc::clone(&requests), Arc::new(bytes));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let (counter, bytes) = (Arc::clone(&counter), Arc::clone(&bytes));
                thread::spawn(move || serve_coalescing(client, &bytes, &counter));
            }
        });
        Coalescing { port, requests }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/s.hf", self.port)
    }
}

/// The byte ranges (first and last byte, the last cut to an object of
/// `size` bytes) the next request on `client` asks for; `None` when the
/// client hangs up.
fn next_ranges(client: &mut TcpStream, size: u64) -> Option<Vec<(u64, u64)>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let spec = text
        .lines()
        .find_map(|l| l.strip_prefix("range: bytes="))
        .unwrap_or("0-0")
        .trim()
        .to_owned();
    Some(
        spec.split(',')
            .map(|r| {
                let (a, b) = r.trim().split_once('-').unwrap();
                (a.parse().unwrap(), b.parse::<u64>().unwrap().min(size - 1))
            })
            .collect(),
    )
}

/// Keep-alive requests on one connection, each answered with one part.
fn serve_coalescing(mut client: TcpStream, bytes: &[u8], counter: &AtomicUsize) {
    while let Some(ranges) = next_ranges(&mut client, bytes.len() as u64) {
        counter.fetch_add(1, Ordering::Relaxed);
        let (start, last) = (ranges[0].0, ranges.last().unwrap().1);
        let body = &bytes[start as usize..=last as usize];
        let answer = format!("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{last}/{}\r\nContent-Length: {}\r\nETag: \"fixed\"\r\n\r\n", bytes.len(), body.len());
        if client
            .write_all(answer.as_bytes())
            .and_then(|_| client.write_all(body))
            .is_err()
        {
            return;
        }
    }
}

/// A server claiming an object of `size` bytes whose first bytes are
/// `prefix` and the rest zeros (generated as they are sent, so the object
/// may claim 2^50 bytes): every GET with a Range header gets a 206 with
/// the Content-Range of what it asked for and that length, one range or a
/// multipart/byteranges body of several, on a keep-alive connection.
/// Counts the body bytes it sent and the requests it answered.
pub struct Claiming {
    pub port: u16,
    pub sent: Arc<AtomicU64>,
    pub requests: Arc<AtomicUsize>,
}

impl Claiming {
    pub fn start(prefix: Vec<u8>, size: u64) -> Claiming {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (counter, asked, prefix) = (Arc::clone(&sent), Arc::clone(&requests), Arc::new(prefix));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let (counter, asked, prefix) = (
                    Arc::clone(&counter),
                    Arc::clone(&asked),
                    Arc::clone(&prefix),
                );
                thread::spawn(move || serve_claiming(client, &prefix, size, &counter, &asked));
            }
        });
        Claiming {
            port,
            sent,
            requests,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/s.hf", self.port)
    }
}

fn serve_claiming(
    mut client: TcpStream,
    prefix: &[u8],
    size: u64,
    sent: &AtomicU64,
    requests: &AtomicUsize,
) {
    while let Some(ranges) = next_ranges(&mut client, size) {
        requests.fetch_add(1, Ordering::Relaxed);
        // The bytes of start..=last, written as they go.
        let write_bytes = |client: &mut TcpStream, start: u64, last: u64| -> std::io::Result<()> {
            let zeros = [0u8; 1 << 16];
            let mut at = start;
            while at <= last {
                let n = if at < prefix.len() as u64 {
                    let end = (last + 1).min(prefix.len() as u64);
                    client.write_all(&prefix[at as usize..end as usize])?;
                    end - at
                } else {
                    let n = (last + 1 - at).min(zeros.len() as u64);
                    client.write_all(&zeros[..n as usize])?;
                    n
                };
                sent.fetch_add(n, Ordering::Relaxed);
                at += n;
            }
            Ok(())
        };
        let result = if let [(start, last)] = ranges[..] {
            let answer = format!("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {start}-{last}/{size}\r\nContent-Length: {}\r\nETag: \"claim\"\r\n\r\n", last + 1 - start);
            client
                .write_all(answer.as_bytes())
                .and_then(|_| write_bytes(&mut client, start, last))
        } else {
            let part = |&(start, last): &(u64, u64)| {
                format!("\r\n--CLAIM\r\nContent-Range: bytes {start}-{last}/{size}\r\n\r\n")
            };
            let end = "\r\n--CLAIM--\r\n";
            let len: u64 = ranges
                .iter()
                .map(|r| part(r).len() as u64 + r.1 + 1 - r.0)
                .sum::<u64>()
                + end.len() as u64;
            let answer = format!("HTTP/1.1 206 Partial Content\r\nContent-Type: multipart/byteranges; boundary=CLAIM\r\nContent-Length: {len}\r\nETag: \"claim\"\r\n\r\n");
            (|| {
                client.write_all(answer.as_bytes())?;
                for range in &ranges {
                    client.write_all(part(range).as_bytes())?;
                    write_bytes(&mut client, range.0, range.1)?;
                }
                client.write_all(end.as_bytes())
            })()
        };
        if result.is_err() {
            return;
        }
    }
}
