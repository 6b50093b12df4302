//! A request body's temporary file (nginx's `ngx_create_temp_file` for
//! `client_body_temp_path`): named by a 10-digit number shared by all workers, under
//! level folders taken from the name's last digits (`levels 1 2`: `DIR/7/45/0000000457`),
//! created `O_EXCL` with mode 0600, folders made on first need. All I/O goes through the
//! ring (monoio fs). The file is removed when the request ends unless
//! `client_body_in_file_only on` keeps it.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use ringfront_config::{InFileOnly, LocationSettings, LogLevel, TempPath};
use ringfront_http::{BodyFraming, RequestHead};

/// nginx's default `client_header_buffer_size` (ringfront does not read that directive).
const HEADER_BUFFER: usize = 1024;

/// Where nginx holds a request's body once read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// In a temporary file: `$request_body` is empty.
    pub in_file: bool,
    mode: InFileOnly,
}

impl Placement {
    /// nginx's rule for a proxied request whose body was read: `client_body_in_file_only`
    /// writes every body (an empty one too) to a file; otherwise one longer than
    /// `client_body_buffer_size` goes there, unless it all came with the head in nginx's
    /// header buffer (`client_header_buffer_size`, 1k, or a large one for a longer head).
    pub fn of(
        s: &LocationSettings,
        head: &RequestHead,
        read: bool,
        body: &[u8],
        head_len: usize,
    ) -> Placement {
        let rb = &s.request_body;
        let has_body = !matches!(head.framing, BodyFraming::None);
        let header_buffer = match head_len <= HEADER_BUFFER {
            true => HEADER_BUFFER,
            false => s.large_client_header_buffers.1,
        };
        let all_preread = matches!(head.framing, BodyFraming::Length(_))
            && head_len + body.len() <= header_buffer;
        let in_file = read
            && has_body
            && s.proxy_pass.is_some()
            && (rb.in_file_only != InFileOnly::Off
                || (body.len() as u64 > rb.buffer_size && !all_preread));
        Placement {
            in_file,
            mode: rb.in_file_only,
        }
    }

    /// Whether the body is read into its file (`client_body_in_file_only`): nginx's other
    /// files are unlinked once open, and [`unlinked`] only names them.
    pub fn spools(&self) -> bool {
        self.in_file && self.mode != InFileOnly::Off
    }

    /// Whether an unlinked file is named (for `$request_body_file` and the log).
    pub fn name_only(&self) -> bool {
        self.in_file && self.mode == InFileOnly::Off
    }

    /// The error log's level for "a client request body is buffered to a temporary
    /// file" (nginx: notice with `client_body_in_file_only`, else warn).
    pub fn log_level(&self) -> LogLevel {
        match self.mode {
            InFileOnly::Off => LogLevel::Warn,
            _ => LogLevel::Notice,
        }
    }

    /// `client_body_in_file_only on` keeps the file after the request.
    pub fn keep(&self) -> bool {
        self.mode == InFileOnly::On
    }
}

/// The next file number (nginx's `ngx_temp_number`), process-wide.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// How many names are tried before giving up (files kept by earlier runs collide).
const ATTEMPTS: usize = 64;

/// The next number; after a collision a larger, pseudo-random step (nginx's
/// `ngx_random_number`) skips past a run of kept files.
fn next_number(collision: bool) -> u32 {
    let step = match collision {
        false => 1,
        true => 1 + (std::process::id() ^ (crate::clock::now_ms() as u32)) % 100_000,
    };
    NEXT.fetch_add(step, Ordering::Relaxed)
}

/// `DIR/<levels>/NNNNNNNNNN`: level `i` is the `levels[i]` digits before the previous
/// level's, counted from the end of the name.
pub fn file_name(t: &TempPath, n: u32) -> PathBuf {
    let name = format!("{n:010}");
    let mut path = t.dir.clone();
    let mut end = name.len();
    for &l in &t.levels {
        let start = end.saturating_sub(usize::from(l));
        path.push(&name[start..end]);
        end = start;
    }
    path.push(&name);
    path
}

/// The body's file: removed on [`BodyFile::finish`] (or, failing that, when dropped)
/// unless kept. While the request lasts it stays open, and the upstream request's body is
/// read from it (by every try).
pub struct BodyFile {
    path: PathBuf,
    keep: bool,
    done: bool,
    file: Option<monoio::fs::File>,
    len: u64,
}

impl BodyFile {
    /// A new, empty file in `t` (its folders made if missing).
    pub async fn create(t: &TempPath, keep: bool) -> io::Result<BodyFile> {
        let (file, path) = open_new(t).await?;
        Ok(BodyFile {
            path,
            keep,
            done: false,
            file: Some(file),
            len: 0,
        })
    }

    /// Appends `data`; it comes back for the next read.
    pub async fn append(&mut self, data: Vec<u8>) -> (io::Result<()>, Vec<u8>) {
        let Some(file) = &self.file else {
            return (Err(io::Error::from(io::ErrorKind::NotFound)), data);
        };
        let n = data.len() as u64;
        let (r, data) = file.write_all_at(data, self.len).await;
        if r.is_ok() {
            self.len += n;
        }
        (r, data)
    }

    /// The open file (none for a name drawn by [`unlinked`]).
    pub fn file(&self) -> Option<&monoio::fs::File> {
        self.file.as_ref()
    }

    /// The body's length in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The name, for `$request_body_file`.
    pub fn name(&self) -> &[u8] {
        self.path.as_os_str().as_bytes()
    }

    /// The request ended: the file is closed, and goes unless `client_body_in_file_only on`.
    pub async fn finish(mut self) {
        self.done = true;
        if let Some(f) = self.file.take() {
            let _ = f.close().await;
        }
        if !self.keep {
            let _ = monoio::fs::remove_file(&self.path).await;
        }
    }
}

impl Drop for BodyFile {
    fn drop(&mut self) {
        // Only when the request was abandoned before `finish` (its future dropped): the
        // one synchronous unlink, so no file outlives a `clean` request.
        if !self.done && !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

async fn create(path: &Path) -> io::Result<monoio::fs::File> {
    monoio::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .await
}

/// Makes the temporary folder and the level folders above `file` (each may exist).
async fn make_folders(t: &TempPath, file: &Path) -> io::Result<()> {
    monoio::fs::create_dir_all(&t.dir).await?;
    let dirs: Vec<&Path> = file.ancestors().skip(1).take(t.levels.len()).collect();
    for d in dirs.into_iter().rev() {
        match monoio::fs::create_dir(d).await {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// A new temporary file in `t`, open for writing.
async fn open_new(t: &TempPath) -> io::Result<(monoio::fs::File, PathBuf)> {
    let mut n = next_number(false);
    let mut made = false;
    for _ in 0..ATTEMPTS {
        let path = file_name(t, n);
        match create(&path).await {
            Ok(f) => return Ok((f, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n = next_number(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !made => {
                make_folders(t, &path).await?;
                made = true;
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// The name of a body's file that nginx unlinks as soon as it is open (a body past
/// `client_body_buffer_size` without `client_body_in_file_only`): `$request_body_file`
/// names it, nothing can open it. ringfront holds that body in memory, so it only draws
/// the name.
pub fn unlinked(t: &TempPath) -> BodyFile {
    BodyFile {
        path: file_name(t, next_number(false)),
        keep: true,
        done: true,
        file: None,
        len: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_take_the_last_digits() {
        let t = TempPath {
            dir: "/t/body".into(),
            levels: vec![1, 2],
        };
        assert_eq!(file_name(&t, 457), Path::new("/t/body/7/45/0000000457"));
        let flat = TempPath {
            dir: "/t/body".into(),
            levels: vec![],
        };
        assert_eq!(file_name(&flat, 3), Path::new("/t/body/0000000003"));
    }

    #[test]
    fn a_file_is_written_under_new_folders_and_cleaned() {
        crate::testutil::on_both(|| async {
            let root = std::env::temp_dir().join(format!("rf-body-{}", std::process::id()));
            let t = TempPath {
                dir: root.join("body"),
                levels: vec![1, 2],
            };
            let mut f = BodyFile::create(&t, false).await.unwrap();
            let (r, body) = f.append(b"hel".to_vec()).await;
            r.unwrap();
            assert_eq!(body, b"hel");
            f.append(b"lo".to_vec()).await.0.unwrap();
            assert_eq!(f.len(), 5);
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(f.name()));
            assert!(path.starts_with(&t.dir));
            assert_eq!(std::fs::read(&path).unwrap(), b"hello");
            f.finish().await;
            assert!(!path.exists(), "a clean file is removed at the end");
            let mut f = BodyFile::create(&t, true).await.unwrap();
            f.append(b"kept".to_vec()).await.0.unwrap();
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(f.name()));
            f.finish().await;
            assert_eq!(std::fs::read(&path).unwrap(), b"kept");
            let _ = std::fs::remove_dir_all(&root);
        });
    }
}
