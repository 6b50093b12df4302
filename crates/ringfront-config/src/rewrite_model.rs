//! The rewrite module as data: each level's `set`, `rewrite`, `return`, `break` and `if`
//! directives in file order, as nginx compiles them into one code array per level
//! (`ngx_http_rewrite_module.c`). The proxy compiles the regexes once and runs the list.

use crate::model::{Origin, Return, Template, Variable};

/// One directive of the rewrite module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewriteOp {
    /// `set $name VALUE`: `Variable::User(var)` gets VALUE.
    Set {
        var: usize,
        value: Template,
    },
    /// `set $args VALUE`: the request's arguments become VALUE.
    SetArgs(Template),
    /// `set $limit_rate VALUE`: this request's `limit_rate` becomes VALUE, a size.
    SetLimitRate(Template),
    Rewrite(Box<Rewrite>),
    /// `return`: stops the level's directives and answers.
    Return(Return),
    /// `break`: stops the level's directives.
    Break,
    /// `if (CONDITION) { ... }`: its directives run in line when the condition holds; the
    /// level's following directives run after them either way.
    If(Box<If>),
}

/// `rewrite REGEX REPLACEMENT [FLAG]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// Matched against `$uri` (case-sensitive unless it says `(?i)`, as nginx).
    pub regex: String,
    /// The new URI (or redirect URL) without the trailing `?` that drops the arguments.
    pub replacement: Template,
    pub flag: RewriteFlag,
    /// 301 or 302 when the rewrite answers with a redirect: a `redirect` or `permanent`
    /// flag, or a replacement starting with `http://`, `https://` or `$scheme` (302).
    pub redirect: Option<u16>,
    /// The request's arguments are appended (the replacement does not end with `?`).
    pub add_args: bool,
    /// The replacement has a `?` of its own (a new argument string, or part of a URL).
    pub has_args: bool,
    pub origin: Origin,
}

/// A rewrite's last argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewriteFlag {
    /// No flag: the next directive runs with the new URI.
    None,
    /// `last`: stop, and search the location again with the new URI.
    Last,
    /// `break`: stop, and stay in this location with the new URI.
    Break,
    Redirect,
    Permanent,
}

/// `if (CONDITION) { ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct If {
    pub condition: Condition,
    pub body: Vec<RewriteOp>,
    /// In a location, an `if` with configuration directives of its own (`proxy_pass`,
    /// `add_header`, `root`, `access_log`, `error_page`): when the condition holds the
    /// request is answered with `LocationSettings::if_settings[i]` (the location's settings
    /// with the block's on top), even after the block's directives end, as nginx.
    pub config: Option<usize>,
}

/// What an `if` tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `($var)`: true unless empty or `0`.
    Set(Variable),
    /// `($var = VALUE)` / `($var != VALUE)` (VALUE may hold variables).
    Equals {
        var: Variable,
        value: Template,
        negate: bool,
    },
    /// `($var ~ RE)`, `~*`, `!~`, `!~*`; a match sets the captures.
    Matches {
        var: Variable,
        regex: String,
        case_insensitive: bool,
        negate: bool,
    },
    /// `(-f PATH)`, `-d`, `-e`, `-x`, and `!-f` ...: PATH (with variables) on disk.
    File {
        test: FileTest,
        path: Template,
        negate: bool,
    },
}

/// What a file test asks of a path (symbolic links followed, as nginx's `stat()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileTest {
    /// `-f`: a regular file.
    Plain,
    /// `-d`: a directory.
    Dir,
    /// `-e`: anything.
    Exists,
    /// `-x`: the owner may execute it (a directory too, as nginx's `ngx_is_exec`).
    Exec,
}

impl crate::model::LocationSettings {
    /// The first `return` of this level's own rewrite directives outside any `if`: what
    /// answers every request here unless a `rewrite` or `break` written before it stops
    /// first.
    pub fn first_return(&self) -> Option<&Return> {
        self.rewrite.iter().find_map(|op| match op {
            RewriteOp::Return(r) => Some(r),
            _ => None,
        })
    }
}
