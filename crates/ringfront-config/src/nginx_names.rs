//! The names of stock nginx's directives (`nginx_directives.txt`, data): a name ringfront does
//! not know is "not supported by ringfront" when nginx has it, `unknown directive` (a typo or
//! a third-party module) when nginx has not either.

const LIST: &str = include_str!("nginx_directives.txt");

fn names() -> impl Iterator<Item = &'static str> {
    LIST.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Whether stock nginx 1.22 has a directive called `name`.
pub(crate) fn is_nginx_directive(name: &str) -> bool {
    names().any(|n| n == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_and_unique() {
        let v: Vec<&str> = names().collect();
        assert!(v.len() > 500, "{}", v.len());
        assert!(v.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn knows_nginx_and_not_typos() {
        for n in [
            "proxy_cache",
            "gzip_types",
            "ssi",
            "mail",
            "stream",
            "sub_filter",
        ] {
            assert!(is_nginx_directive(n), "{n}");
        }
        for n in ["proxy_cahce", "more_set_headers", "lua_code_cache", ""] {
            assert!(!is_nginx_directive(n), "{n}");
        }
    }
}
