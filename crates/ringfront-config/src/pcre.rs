//! PCRE syntax nginx configurations use that Rust's `regex` reads otherwise, rewritten
//! once when the configuration loads: `\Q...\E` (everything between taken literally; an
//! unterminated `\Q` runs to the end, as PCRE) and `\Z` (the end, or before a final
//! newline). Everything else is passed through; what `regex` cannot read (look-around,
//! backreferences) stays an `invalid regular expression` error naming the reason.

use std::borrow::Cow;

/// The pattern in `regex` syntax.
pub fn translate(pattern: &str) -> Cow<'_, str> {
    if !pattern.contains("\\Q") && !pattern.contains("\\Z") {
        return Cow::Borrowed(pattern);
    }
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            push(&mut out, c, quoted);
            continue;
        }
        match chars.next() {
            Some('E') if quoted => quoted = false,
            Some('Q') if !quoted => quoted = true,
            Some(n) if quoted => {
                push(&mut out, '\\', true);
                push(&mut out, n, true);
            }
            Some('Z') => out.push_str("(?:\\n?\\z)"),
            Some(n) => {
                out.push('\\');
                out.push(n);
            }
            None => out.push('\\'),
        }
    }
    Cow::Owned(out)
}

fn push(out: &mut String, c: char, quoted: bool) {
    if quoted && regex_syntax_meta(c) {
        out.push('\\');
    }
    out.push(c);
}

/// The characters `regex` treats as syntax (its `escape` set).
fn regex_syntax_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(p: &str, text: &str) -> bool {
        regex::Regex::new(&translate(p)).unwrap().is_match(text)
    }

    #[test]
    fn quoted_parts_are_literal() {
        let p = r"^(?P<name>[a-z]+)\Q.example.com\E$";
        assert!(matches(p, "www.example.com"));
        assert!(!matches(p, "wwwXexample.com"));
        assert!(matches(r"^\Qa+b(\E+$", "a+b(((("));
        assert!(matches(r"^\Q\d", r"\d"));
        assert!(!matches(r"^\Q\d", "5"));
        assert_eq!(translate(r"^/plain\.txt$"), r"^/plain\.txt$");
    }

    #[test]
    fn end_before_a_final_newline() {
        assert!(matches(r"^abc\Z", "abc"));
        assert!(matches(r"^abc\Z", "abc\n"));
        assert!(!matches(r"^abc\Z", "abc\nx"));
        assert!(matches(r"\\Z", r"\Z"));
    }
}
