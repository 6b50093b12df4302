//! nginx's configuration tokenizer, a transcription of `ngx_conf_read_token`: it reads one
//! directive (its words up to `;` or `{`) or one `}` at a time, with nginx's quoting,
//! escaping and comment rules, and nginx's error wording.

/// What one call to [`Lexer::next_step`] read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Words of a directive, ended by `;` (`block == false`) or `{` (`block == true`).
    /// `line` is where the terminator is, the line nginx reports for the directive.
    Directive {
        args: Vec<String>,
        block: bool,
        line: usize,
    },
    /// A `}`.
    BlockEnd { line: usize },
    /// End of input outside any directive.
    Eof { line: usize },
}

/// A syntax error and the line it was found on (the file is added by the caller).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LexError {
    pub message: String,
    pub line: usize,
}

pub(crate) struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: usize,
}

fn is_space(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

/// Copies a word, resolving the escapes nginx resolves (`\"`, `\'`, `\\`, `\t`, `\r`, `\n`);
/// any other backslash is kept as written (`\d` stays `\d`, which regexes rely on).
fn unescape(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' {
            match raw.get(i + 1) {
                Some(b'"' | b'\'' | b'\\') => i += 1,
                Some(b't') => {
                    out.push(b'\t');
                    i += 2;
                    continue;
                }
                Some(b'r') => {
                    out.push(b'\r');
                    i += 2;
                    continue;
                }
                Some(b'n') => {
                    out.push(b'\n');
                    i += 2;
                    continue;
                }
                _ => {}
            }
        }
        if let Some(&b) = raw.get(i) {
            out.push(b);
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a [u8]) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
        }
    }

    fn error(&self, message: String) -> LexError {
        LexError {
            message,
            line: self.line,
        }
    }

    fn unexpected(&self, ch: u8) -> LexError {
        self.error(format!("unexpected \"{}\"", char::from(ch)))
    }

    /// Reads the next directive, `}` or end of input.
    pub(crate) fn next_step(&mut self) -> Result<Step, LexError> {
        let mut args: Vec<String> = Vec::new();
        let mut last_space = true;
        let mut need_space = false;
        let mut sharp_comment = false;
        let mut quoted = false;
        let mut s_quoted = false;
        let mut d_quoted = false;
        let mut variable = false;
        let mut start = self.pos;

        loop {
            let Some(&ch) = self.src.get(self.pos) else {
                if !args.is_empty() || !last_space {
                    return Err(
                        self.error("unexpected end of file, expecting \";\" or \"}\"".to_string())
                    );
                }
                return Ok(Step::Eof { line: self.line });
            };
            self.pos += 1;

            if ch == b'\n' {
                self.line += 1;
                sharp_comment = false;
            }
            if sharp_comment {
                continue;
            }
            if quoted {
                quoted = false;
                continue;
            }

            if need_space {
                if is_space(ch) {
                    last_space = true;
                    need_space = false;
                    continue;
                }
                match ch {
                    b';' => return Ok(self.directive(args, false)),
                    b'{' => return Ok(self.directive(args, true)),
                    // nginx lets `)` follow a quoted word (for `if ($x = "y")`).
                    b')' => {
                        last_space = true;
                        need_space = false;
                    }
                    _ => return Err(self.unexpected(ch)),
                }
            }

            if last_space {
                start = self.pos - 1;
                if is_space(ch) {
                    continue;
                }
                match ch {
                    b';' | b'{' => {
                        if args.is_empty() {
                            return Err(self.unexpected(ch));
                        }
                        return Ok(self.directive(args, ch == b'{'));
                    }
                    b'}' => {
                        if !args.is_empty() {
                            return Err(self.unexpected(ch));
                        }
                        return Ok(Step::BlockEnd { line: self.line });
                    }
                    b'#' => sharp_comment = true,
                    b'\\' => {
                        quoted = true;
                        last_space = false;
                    }
                    b'"' => {
                        start += 1;
                        d_quoted = true;
                        last_space = false;
                    }
                    b'\'' => {
                        start += 1;
                        s_quoted = true;
                        last_space = false;
                    }
                    b'$' => {
                        variable = true;
                        last_space = false;
                    }
                    _ => last_space = false,
                }
                continue;
            }

            // Inside a word: `${` does not end it, so `${name}` works unquoted.
            if ch == b'{' && variable {
                continue;
            }
            variable = false;
            if ch == b'\\' {
                quoted = true;
                continue;
            }
            if ch == b'$' {
                variable = true;
                continue;
            }

            let found = if d_quoted {
                if ch == b'"' {
                    d_quoted = false;
                    need_space = true;
                }
                !d_quoted
            } else if s_quoted {
                if ch == b'\'' {
                    s_quoted = false;
                    need_space = true;
                }
                !s_quoted
            } else if is_space(ch) || ch == b';' || ch == b'{' {
                last_space = true;
                true
            } else {
                false
            };

            if found {
                let end = self.pos - 1;
                args.push(unescape(self.src.get(start..end).unwrap_or_default()));
                if need_space {
                    continue;
                }
                match ch {
                    b';' => return Ok(self.directive(args, false)),
                    b'{' => return Ok(self.directive(args, true)),
                    _ => {}
                }
            }
        }
    }

    fn directive(&self, args: Vec<String>, block: bool) -> Step {
        Step::Directive {
            args,
            block,
            line: self.line,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(src: &str) -> Result<Vec<Step>, LexError> {
        let mut lx = Lexer::new(src.as_bytes());
        let mut out = Vec::new();
        loop {
            let step = lx.next_step()?;
            let done = matches!(step, Step::Eof { .. });
            out.push(step);
            if done {
                return Ok(out);
            }
        }
    }

    fn words(src: &str) -> Vec<String> {
        match steps(src).expect("lexes").into_iter().next() {
            Some(Step::Directive { args, .. }) => args,
            other => panic!("not a directive: {other:?}"),
        }
    }

    fn err(src: &str) -> (String, usize) {
        let e = steps(src).expect_err("must fail");
        (e.message, e.line)
    }

    #[test]
    fn words_blocks_and_lines() {
        let s = steps("a b;\nc {\n d;\n}\n").unwrap();
        assert_eq!(
            s,
            vec![
                Step::Directive {
                    args: vec!["a".into(), "b".into()],
                    block: false,
                    line: 1
                },
                Step::Directive {
                    args: vec!["c".into()],
                    block: true,
                    line: 2
                },
                Step::Directive {
                    args: vec!["d".into()],
                    block: false,
                    line: 3
                },
                Step::BlockEnd { line: 4 },
                Step::Eof { line: 5 },
            ]
        );
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(words(r#"x "a b" 'c d';"#), ["x", "a b", "c d"]);
        assert_eq!(
            words(r#"x "q\"q" 'q\'q' "b\\s";"#),
            ["x", "q\"q", "q'q", "b\\s"]
        );
        assert_eq!(words(r#"x "l\n\t\r";"#), ["x", "l\n\t\r"]);
        assert_eq!(words(r#"x "" '';"#), ["x", "", ""]);
        // Unknown escapes are kept, as nginx does (regexes need `\d`).
        assert_eq!(words(r"x ^/\d+$;"), ["x", r"^/\d+$"]);
        // Escaped space joins a word.
        assert_eq!(words(r"x a\ b;"), ["x", r"a\ b"]);
        // A quote inside a word is an ordinary character.
        assert_eq!(words(r#"x a"b";"#), ["x", "a\"b\""]);
        // Multi-line quoted string.
        assert_eq!(words("x \"a\nb\";"), ["x", "a\nb"]);
    }

    #[test]
    fn comments_and_variables() {
        assert_eq!(words("# c ; {\nx y; # tail"), ["x", "y"]);
        assert_eq!(words("x a#b;"), ["x", "a#b"]);
        assert_eq!(words("x ${host}x $a;"), ["x", "${host}x", "$a"]);
        assert_eq!(words("x a}b;"), ["x", "a}b"]);
        assert_eq!(words("x{"), ["x"]);
    }

    #[test]
    fn syntax_errors() {
        assert_eq!(
            err("a b"),
            ("unexpected end of file, expecting \";\" or \"}\"".into(), 1)
        );
        assert_eq!(
            err("a \"b;\n"),
            ("unexpected end of file, expecting \";\" or \"}\"".into(), 2)
        );
        assert_eq!(err("\n;"), ("unexpected \";\"".into(), 2));
        assert_eq!(err("{"), ("unexpected \"{\"".into(), 1));
        assert_eq!(err("a }"), ("unexpected \"}\"".into(), 1));
        assert_eq!(err("a \"b\"c;"), ("unexpected \"c\"".into(), 1));
        assert_eq!(
            err("\\"),
            ("unexpected end of file, expecting \";\" or \"}\"".into(), 1)
        );
    }

    #[test]
    fn quoted_word_may_touch_terminators() {
        assert_eq!(words("x \"a\";"), ["x", "a"]);
        let s = steps("x 'a'{}").unwrap();
        assert!(matches!(&s[0], Step::Directive { block: true, .. }));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let inputs: [&[u8]; 6] = [b"\xff\xfe;", b"\"\\", b"'", b"$", b"${", b"a \xc3"];
        for input in inputs {
            let mut lx = Lexer::new(input);
            for _ in 0..10 {
                if !matches!(lx.next_step(), Ok(Step::Directive { .. })) {
                    break;
                }
            }
        }
    }
}
