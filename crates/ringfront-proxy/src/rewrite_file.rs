//! The file tests of `if` (`-f`, `-d`, `-e`, `-x`) as `ngx_http_script_file_code` answers
//! them, the `stat()` through the ring (monoio's statx; the epoll driver runs it inline).

use ringfront_config::FileTest;

/// Whether `path` passes `test` (symbolic links followed). A path that is not there is a
/// plain `false`; any other failure is the error, for the caller to log (nginx: `crit`)
/// before it counts as `false`.
pub async fn test(test: FileTest, path: &[u8]) -> std::io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let os = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    let meta = match monoio::fs::metadata(os).await {
        Ok(m) => m,
        Err(e) => {
            let quiet = [libc::ENOENT, libc::ENOTDIR, libc::ENAMETOOLONG];
            if e.raw_os_error().is_some_and(|c| quiet.contains(&c)) {
                return Ok(false);
            }
            return Err(e);
        }
    };
    Ok(match test {
        FileTest::Plain => meta.is_file(),
        FileTest::Dir => meta.is_dir(),
        FileTest::Exists => true,
        // nginx's `ngx_is_exec`: the owner's execute bit, on a directory too.
        FileTest::Exec => meta.mode() & 0o100 != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_answer_as_nginx() {
        crate::testutil::on_both(|| async {
            let dir = std::env::temp_dir();
            let d = dir.to_string_lossy().into_owned();
            assert!(test(FileTest::Dir, d.as_bytes()).await.unwrap());
            assert!(!test(FileTest::Plain, d.as_bytes()).await.unwrap());
            assert!(test(FileTest::Exec, d.as_bytes()).await.unwrap());
            assert!(test(FileTest::Exists, b"/").await.unwrap());
            assert!(!test(FileTest::Exists, b"/no/such/path").await.unwrap());
            assert!(!test(FileTest::Plain, b"/etc/hostname/x").await.unwrap());
        });
    }
}
