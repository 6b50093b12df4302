//! The block tree: directives with their arguments and nested blocks, read from the main file
//! with every `include` expanded in place, as nginx's `ngx_conf_parse` does.

use std::path::{Path, PathBuf};

use crate::error::{os_failure, ConfigError};
use crate::host::{GlobError, Host};
use crate::lexer::{LexError, Lexer, Step};
use crate::model::Origin;

/// Deepest nesting of blocks and includes together; nginx has no limit but recursion needs one.
const MAX_DEPTH: usize = 100;

/// One directive: `name args... ;` or `name args... { block }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub block: Option<Vec<Directive>>,
    pub origin: Origin,
    /// For a block, the line of its `}` (nginx reports checks made after reading a block
    /// there); the line of the directive otherwise.
    pub end_line: usize,
}

impl Directive {
    /// The n-th argument after the name, or "" when absent (counts are checked by the table).
    pub(crate) fn arg(&self, n: usize) -> &str {
        self.args.get(n).map(String::as_str).unwrap_or_default()
    }

    pub(crate) fn children(&self) -> &[Directive] {
        self.block.as_deref().unwrap_or_default()
    }

    /// Where the block ends, for errors nginx reports after reading it.
    pub(crate) fn end(&self) -> Origin {
        Origin {
            file: self.origin.file.clone(),
            line: self.end_line,
        }
    }
}

/// Reads files and expands includes through `host`. Relative include paths are taken from
/// `prefix`, the main configuration file's folder (nginx's conf prefix), whichever file
/// includes them.
pub(crate) struct Reader<'a> {
    host: &'a dyn Host,
    prefix: PathBuf,
    /// Files being read, outermost first: an include of one of them is a cycle.
    open: Vec<PathBuf>,
}

fn lex_error(e: LexError, file: &Path) -> ConfigError {
    ConfigError {
        message: e.message,
        file: Some(file.to_path_buf()),
        line: Some(e.line),
    }
}

impl<'a> Reader<'a> {
    pub(crate) fn new(host: &'a dyn Host, prefix: &Path) -> Self {
        Reader {
            host,
            prefix: prefix.to_path_buf(),
            open: Vec::new(),
        }
    }

    /// Parses the main file's text (already read) into its top-level directives.
    pub(crate) fn parse_main(
        &mut self,
        text: &[u8],
        file: &Path,
    ) -> Result<Vec<Directive>, ConfigError> {
        self.parse_file(text, file, 0)
    }

    fn parse_file(
        &mut self,
        text: &[u8],
        file: &Path,
        depth: usize,
    ) -> Result<Vec<Directive>, ConfigError> {
        self.open.push(self.host.file_key(file));
        let mut lexer = Lexer::new(text);
        let result = self.parse_block(&mut lexer, file, depth, false);
        self.open.pop();
        result.map(|(directives, _)| directives)
    }

    fn parse_block(
        &mut self,
        lexer: &mut Lexer<'_>,
        file: &Path,
        depth: usize,
        in_block: bool,
    ) -> Result<(Vec<Directive>, usize), ConfigError> {
        let mut out = Vec::new();
        loop {
            let step = lexer.next_step().map_err(|e| lex_error(e, file))?;
            match step {
                Step::Eof { line } => {
                    if in_block {
                        return Err(ConfigError::at(
                            "unexpected end of file, expecting \"}\"",
                            &Origin {
                                file: file.to_path_buf(),
                                line,
                            },
                        ));
                    }
                    return Ok((out, line));
                }
                Step::BlockEnd { line } => {
                    if !in_block {
                        return Err(ConfigError::at(
                            "unexpected \"}\"",
                            &Origin {
                                file: file.to_path_buf(),
                                line,
                            },
                        ));
                    }
                    return Ok((out, line));
                }
                Step::Directive {
                    mut args,
                    block,
                    line,
                } => {
                    let origin = Origin {
                        file: file.to_path_buf(),
                        line,
                    };
                    if depth >= MAX_DEPTH {
                        return Err(ConfigError::at(
                            format!("too deep nesting of blocks and includes (over {MAX_DEPTH})"),
                            &origin,
                        ));
                    }
                    let name = if args.is_empty() {
                        String::new()
                    } else {
                        args.remove(0)
                    };
                    if name == "include" {
                        if block {
                            return Err(ConfigError::at(
                                "directive \"include\" is not terminated by \";\"",
                                &origin,
                            ));
                        }
                        if args.len() != 1 {
                            return Err(ConfigError::at(
                                "invalid number of arguments in \"include\" directive",
                                &origin,
                            ));
                        }
                        out.extend(self.include(&args[0], &origin, depth + 1)?);
                        continue;
                    }
                    let (block, end_line) = if block {
                        let (children, end) = self.parse_block(lexer, file, depth + 1, true)?;
                        (Some(children), end)
                    } else {
                        (None, line)
                    };
                    out.push(Directive {
                        name,
                        args,
                        block,
                        origin,
                        end_line,
                    });
                }
            }
        }
    }

    /// `include FILE|GLOB`: a glob may match nothing; a plain file must exist, except a
    /// `mime.types` (ringfront does not use MIME types, and the Debian layout keeps that file
    /// outside the folder relative includes are read from).
    fn include(
        &mut self,
        pattern: &str,
        origin: &Origin,
        depth: usize,
    ) -> Result<Vec<Directive>, ConfigError> {
        let full = self.prefix.join(pattern);
        let files = if pattern.contains(['*', '?', '[']) {
            self.glob(&full, origin)?
        } else {
            vec![full]
        };
        let mut out = Vec::new();
        for path in files {
            let text = match self.host.read(&path) {
                Ok(text) => text,
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        && pattern.ends_with("mime.types") =>
                {
                    continue;
                }
                Err(e) => return Err(ConfigError::at(os_failure("open()", &path, &e), origin)),
            };
            if self.open.contains(&self.host.file_key(&path)) {
                return Err(ConfigError::at(
                    format!("include cycle: \"{}\" includes itself", path.display()),
                    origin,
                ));
            }
            out.extend(self.parse_file(&text, &path, depth)?);
        }
        Ok(out)
    }

    /// Expands a glob the way glob(3) does for nginx: sorted, dot files not matched by `*`.
    fn glob(&self, full: &Path, origin: &Origin) -> Result<Vec<PathBuf>, ConfigError> {
        // The prefix itself may contain glob metacharacters; only the written part is a pattern.
        let written = full.strip_prefix(&self.prefix).unwrap_or(full);
        let pattern = if written.is_absolute() {
            written.to_string_lossy().into_owned()
        } else {
            let base = glob::Pattern::escape(&self.prefix.to_string_lossy());
            format!("{base}/{}", written.to_string_lossy())
        };
        let mut files = self.host.glob(&pattern).map_err(|e| {
            let message = match e {
                GlobError::Pattern(why) => {
                    format!("invalid include pattern \"{}\": {why}", full.display())
                }
                GlobError::Read { path, error } => os_failure("glob()", &path, &error),
            };
            ConfigError::at(message, origin)
        })?;
        files.sort();
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::MemoryHost;

    fn parse(text: &str) -> Result<Vec<Directive>, ConfigError> {
        Reader::new(&MemoryHost::new(), Path::new("/nonexistent-ringfront"))
            .parse_main(text.as_bytes(), Path::new("/c/main.conf"))
    }

    #[test]
    fn builds_nested_blocks() {
        let tree = parse("a 1;\nb {\n  c 2 3;\n  d { }\n}\n").unwrap();
        assert_eq!(tree.len(), 2);
        assert_eq!(tree[0].name, "a");
        assert_eq!(tree[0].args, ["1"]);
        assert!(tree[0].block.is_none());
        let b = &tree[1];
        assert_eq!(b.origin.line, 2);
        assert_eq!(b.children().len(), 2);
        assert_eq!(b.children()[0].args, ["2", "3"]);
        assert_eq!(b.children()[1].block.as_deref(), Some(&[][..]));
    }

    #[test]
    fn block_errors_carry_file_and_line() {
        let e = parse("a {\n b;\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unexpected end of file, expecting \"}\" in /c/main.conf:3"
        );
        let e = parse("a;\n}\n").unwrap_err();
        assert_eq!(e.to_string(), "unexpected \"}\" in /c/main.conf:2");
    }

    #[test]
    fn include_argument_errors() {
        let e = parse("include a b;").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid number of arguments in \"include\" directive in /c/main.conf:1"
        );
        let e = parse("include a { }").unwrap_err();
        assert_eq!(
            e.to_string(),
            "directive \"include\" is not terminated by \";\" in /c/main.conf:1"
        );
    }

    #[test]
    fn missing_mime_types_is_skipped_and_glob_may_match_nothing() {
        let tree =
            parse("include mime.types;\ninclude /nonexistent-ringfront/*.conf;\nx;").unwrap();
        assert_eq!(tree.len(), 1);
        let e = parse("include missing.conf;").unwrap_err();
        assert_eq!(
            e.to_string(),
            "open() \"/nonexistent-ringfront/missing.conf\" failed (2: No such file or directory) in /c/main.conf:1"
        );
    }

    #[test]
    fn depth_is_limited() {
        let text = "a {".repeat(MAX_DEPTH + 5);
        let e = parse(&text).unwrap_err();
        assert!(e.message.starts_with("too deep nesting"), "{e}");
    }
}
