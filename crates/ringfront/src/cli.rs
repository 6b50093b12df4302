//! Command-line flags: nginx's, read as nginx's `ngx_get_options` reads them (`-p -c -e -g
//! -s` take the rest of the word or the next one, `-tq` combine, nginx's messages for bad
//! ones), plus the engine's own long flags: `--workers N`, `--cpu-affinity auto|off|LIST`,
//! `--driver auto|io_uring|epoll`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ringfront_config::{CpuAffinity, LoadOptions};

pub const USAGE: &str = "Usage: ringfront [-?hvVtTq] [-s signal] [-p prefix]
                 [-e filename] [-c filename] [-g directives]
                 [--workers N|auto] [--cpu-affinity auto|off|CPU,CPU,...]
                 [--driver auto|io_uring|epoll]

Options:
  -?,-h         : this help
  -v            : show version and exit
  -V            : show version and configure options (the nginx modules ringfront lacks)
  -t            : test configuration and exit
  -T            : test configuration, dump it and exit
  -q            : suppress non-error messages during configuration testing
  -s signal     : send signal to the running instance: stop, quit, reopen, reload
  -p prefix     : set prefix path: relative pid, log and root paths start there
                  (default: the configuration file's folder)
  -e filename   : set error log file (default: stderr)
  -c filename   : set configuration file (default: config/ringfront.conf)
  -g directives : set global directives out of configuration file
  --workers N   : worker threads (overrides worker_processes; auto = one per core)
  --cpu-affinity A : pin workers: auto (worker i on core i), off, or a list of CPU ids
  --driver D    : event loop: io_uring, epoll, or auto (io_uring when available);
                  also RINGFRONT_DRIVER";

/// The configuration file when `-c` is not given.
const DEFAULT_CONFIG: &str = "config/ringfront.conf";

#[derive(Debug, Default)]
pub struct Args {
    pub config: Option<PathBuf>,
    pub prefix: Option<PathBuf>,
    pub error_log: Option<String>,
    pub globals: Option<String>,
    pub test: bool,
    pub dump: bool,
    pub quiet: bool,
    pub signal: Option<String>,
    pub workers: Option<usize>,
    pub cpu_affinity: Option<CpuAffinity>,
    pub driver: Option<String>,
    pub help: bool,
    pub version: bool,
    pub configure: bool,
}

pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Args> {
    let mut a = Args::default();
    while let Some(arg) = it.next() {
        if arg.starts_with("--") {
            long(&mut a, &arg, &mut it)?;
            continue;
        }
        let Some(flags) = arg.strip_prefix('-') else {
            bail!("invalid option: \"{arg}\"");
        };
        short(&mut a, flags, &mut it)?;
    }
    Ok(a)
}

/// One word of single-letter flags (`-t`, `-tq`, `-p/dir`, `-p /dir`).
fn short(a: &mut Args, flags: &str, it: &mut impl Iterator<Item = String>) -> Result<()> {
    for (i, c) in flags.char_indices() {
        let rest = &flags[i + c.len_utf8()..];
        let mut value = |what: &str| match rest {
            "" => it
                .next()
                .with_context(|| format!("option \"-{c}\" requires {what}")),
            attached => Ok(attached.to_string()),
        };
        match c {
            '?' | 'h' => (a.help, a.version) = (true, true),
            'v' => a.version = true,
            'V' => (a.version, a.configure) = (true, true),
            't' => a.test = true,
            'T' => (a.test, a.dump) = (true, true),
            'q' => a.quiet = true,
            'p' => a.prefix = Some(PathBuf::from(value("directory name")?)),
            'c' => a.config = Some(PathBuf::from(value("file name")?)),
            'e' => a.error_log = Some(value("file name")?),
            'g' => a.globals = Some(value("parameter")?),
            's' => a.signal = Some(signal_name(value("parameter")?)?),
            other => bail!("invalid option: \"{other}\""),
        }
        if matches!(c, 'p' | 'c' | 'e' | 'g' | 's') {
            break;
        }
    }
    Ok(())
}

fn signal_name(s: String) -> Result<String> {
    match s.as_str() {
        "stop" | "quit" | "reopen" | "reload" => Ok(s),
        _ => bail!("invalid option: \"-s {s}\""),
    }
}

/// ringfront's own flags, each with a value in the next word.
fn long(a: &mut Args, flag: &str, it: &mut impl Iterator<Item = String>) -> Result<()> {
    let mut value = || {
        it.next()
            .with_context(|| format!("option \"{flag}\" requires an argument"))
    };
    match flag {
        "--help" => (a.help, a.version) = (true, true),
        "--version" => a.version = true,
        "--workers" => a.workers = Some(workers(&value()?)?),
        "--cpu-affinity" => a.cpu_affinity = Some(cpu_affinity(&value()?)?),
        "--driver" => {
            let v = value()?;
            if !matches!(v.as_str(), "auto" | "io_uring" | "iouring" | "epoll") {
                bail!("invalid --driver \"{v}\"");
            }
            a.driver = Some(v);
        }
        other => bail!("invalid option: \"{other}\""),
    }
    Ok(())
}

fn workers(v: &str) -> Result<usize> {
    if v == "auto" {
        return Ok(0);
    }
    v.parse()
        .with_context(|| format!("invalid --workers \"{v}\""))
}

fn cpu_affinity(v: &str) -> Result<CpuAffinity> {
    Ok(match v {
        "auto" => CpuAffinity::Auto,
        "off" => CpuAffinity::Off,
        list => CpuAffinity::Masks(
            list.split(',')
                .map(|c| {
                    c.trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|&c| c < 64)
                        .map(|c| 1u64 << c)
                })
                .collect::<Option<Vec<_>>>()
                .with_context(|| format!("invalid --cpu-affinity \"{v}\""))?,
        ),
    })
}

impl Args {
    /// `-p`, absolute (a relative prefix starts at the current folder, as nginx's).
    pub fn prefix(&self) -> Option<PathBuf> {
        self.prefix.as_deref().map(absolute)
    }

    /// The configuration file: `-c` or the default, a relative one taken from the prefix
    /// when `-p` is given (nginx), from the current folder otherwise.
    pub fn config_path(&self) -> PathBuf {
        let c = self.config.as_deref().unwrap_or(Path::new(DEFAULT_CONFIG));
        match self.prefix() {
            Some(p) => absolute(&p.join(c)),
            None => absolute(c),
        }
    }

    /// `-e`: `None` for `stderr` or when not given; a relative file starts where the
    /// configuration's relative paths start (the prefix, else the file's folder).
    pub fn error_log_path(&self) -> Option<PathBuf> {
        let e = self.error_log.as_deref().filter(|&e| e != "stderr")?;
        let base = self.prefix().unwrap_or_else(|| {
            let conf = self.config_path();
            conf.parent().map(Path::to_path_buf).unwrap_or_default()
        });
        Some(base.join(e))
    }

    /// What the loader takes from the command line.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            prefix: self.prefix(),
            globals: self.globals.clone(),
            error_log: self.error_log_path(),
        }
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args> {
        parse(s.split_whitespace().map(String::from))
    }

    fn error(s: &str) -> String {
        args(s).unwrap_err().to_string()
    }

    #[test]
    fn engine_flags() {
        let a = args("-c x.conf -t --workers 3 --cpu-affinity 1,3 --driver epoll").unwrap();
        assert_eq!(a.config, Some(PathBuf::from("x.conf")));
        assert!(a.test);
        assert_eq!(a.workers, Some(3));
        assert_eq!(a.cpu_affinity, Some(CpuAffinity::Masks(vec![2, 8])));
        assert_eq!(a.driver.as_deref(), Some("epoll"));
        assert!(args("--driver kqueue").is_err());
        assert_eq!(args("--workers auto").unwrap().workers, Some(0));
        assert_eq!(error("--bogus"), "invalid option: \"--bogus\"");
        assert_eq!(
            error("--workers"),
            "option \"--workers\" requires an argument"
        );
    }

    #[test]
    fn nginx_harness_command_line() {
        let a = args("-p /tmp/t/ -c nginx.conf -e error.log -g daemon_off;").unwrap();
        assert_eq!(a.prefix(), Some(PathBuf::from("/tmp/t/")));
        assert_eq!(a.config_path(), PathBuf::from("/tmp/t/nginx.conf"));
        assert_eq!(a.error_log_path(), Some(PathBuf::from("/tmp/t/error.log")));
        assert_eq!(a.globals.as_deref(), Some("daemon_off;"));
        let a = args("-p/tmp/t -c/etc/x.conf -estderr").unwrap();
        assert_eq!(a.config_path(), PathBuf::from("/etc/x.conf"));
        assert_eq!(a.error_log_path(), None);
    }

    #[test]
    fn combined_and_version_flags() {
        let a = args("-tq").unwrap();
        assert!(a.test && a.quiet && !a.dump);
        let a = args("-T").unwrap();
        assert!(a.test && a.dump);
        let a = args("-V").unwrap();
        assert!(a.version && a.configure);
        let a = args("-v").unwrap();
        assert!(a.version && !a.configure);
        assert!(args("-h").unwrap().help);
        assert_eq!(args("-s reload").unwrap().signal.as_deref(), Some("reload"));
        assert_eq!(args("-sstop").unwrap().signal.as_deref(), Some("stop"));
    }

    #[test]
    fn bad_flags_read_like_nginx() {
        assert_eq!(error("-x"), "invalid option: \"x\"");
        assert_eq!(error("-tx"), "invalid option: \"x\"");
        assert_eq!(error("foo"), "invalid option: \"foo\"");
        assert_eq!(error("-c"), "option \"-c\" requires file name");
        assert_eq!(error("-p"), "option \"-p\" requires directory name");
        assert_eq!(error("-e"), "option \"-e\" requires file name");
        assert_eq!(error("-g"), "option \"-g\" requires parameter");
        assert_eq!(error("-s"), "option \"-s\" requires parameter");
        assert_eq!(error("-s restart"), "invalid option: \"-s restart\"");
    }

    #[test]
    fn relative_paths_without_prefix_start_at_the_config() {
        let a = args("-c /etc/rf/x.conf -e logs/e.log").unwrap();
        assert_eq!(a.prefix(), None);
        assert_eq!(
            a.error_log_path(),
            Some(PathBuf::from("/etc/rf/logs/e.log"))
        );
        assert!(a.load_options().globals.is_none());
    }
}
