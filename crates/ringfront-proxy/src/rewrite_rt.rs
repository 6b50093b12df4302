//! The rewrite directives of one level, compiled once per configuration: regexes built, named
//! captures tied to the variable slots they fill. [`crate::rewrite`] runs them.

use regex::{Regex, RegexBuilder};
use ringfront_config::{Condition, Return, Rewrite, RewriteOp, Template, Variable};

use crate::build_error::BuildError;

/// A level's directives in file order; empty when it has none.
#[derive(Debug, Default)]
pub struct Program {
    pub ops: Vec<Op>,
}

#[derive(Debug)]
pub enum Op {
    Set { var: usize, value: Template },
    SetArgs(Template),
    SetLimitRate(Template),
    Rewrite(Box<RewriteRt>),
    Return(Return),
    Break,
    If(Box<IfRt>),
}

/// A regex with the variable slot of each of its named groups: (group index, slot).
#[derive(Debug)]
pub struct Matcher {
    pub re: Regex,
    /// As written, for `rewrite_log`.
    pub pattern: String,
    pub names: Vec<(usize, usize)>,
}

#[derive(Debug)]
pub struct RewriteRt {
    pub matcher: Matcher,
    pub rule: Rewrite,
}

#[derive(Debug)]
pub struct IfRt {
    pub cond: Cond,
    pub body: Vec<Op>,
    /// The location's `ifs[i]` answers once the condition held.
    pub config: Option<usize>,
}

#[derive(Debug)]
pub enum Cond {
    Set(Variable),
    Equals {
        var: Variable,
        value: Template,
        negate: bool,
    },
    Matches {
        var: Variable,
        matcher: Matcher,
        negate: bool,
    },
    File {
        test: ringfront_config::FileTest,
        path: Template,
        negate: bool,
    },
}

impl Matcher {
    /// Compiles `pattern`; `variables` are the configuration's variable names (a named
    /// group fills the slot of its name).
    pub fn build(
        pattern: &str,
        case_insensitive: bool,
        variables: &[String],
    ) -> Result<Matcher, BuildError> {
        let re = RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| BuildError::Regex(pattern.to_string(), e.to_string()))?;
        let names = re
            .capture_names()
            .enumerate()
            .filter_map(|(group, name)| {
                let name = name?.to_ascii_lowercase();
                let slot = variables.iter().position(|v| *v == name)?;
                Some((group, slot))
            })
            .collect();
        Ok(Matcher {
            re,
            pattern: pattern.to_string(),
            names,
        })
    }
}

impl Program {
    pub fn build(ops: &[RewriteOp], variables: &[String]) -> Result<Program, BuildError> {
        Ok(Program {
            ops: build_ops(ops, variables)?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

fn build_ops(ops: &[RewriteOp], variables: &[String]) -> Result<Vec<Op>, BuildError> {
    ops.iter().map(|op| build_op(op, variables)).collect()
}

fn build_op(op: &RewriteOp, variables: &[String]) -> Result<Op, BuildError> {
    Ok(match op {
        RewriteOp::Set { var, value } => Op::Set {
            var: *var,
            value: value.clone(),
        },
        RewriteOp::SetArgs(value) => Op::SetArgs(value.clone()),
        RewriteOp::SetLimitRate(value) => Op::SetLimitRate(value.clone()),
        RewriteOp::Rewrite(rule) => Op::Rewrite(Box::new(RewriteRt {
            matcher: Matcher::build(&rule.regex, false, variables)?,
            rule: (**rule).clone(),
        })),
        RewriteOp::Return(r) => Op::Return(r.clone()),
        RewriteOp::Break => Op::Break,
        RewriteOp::If(i) => Op::If(Box::new(IfRt {
            cond: build_cond(&i.condition, variables)?,
            body: build_ops(&i.body, variables)?,
            config: i.config,
        })),
    })
}

fn build_cond(c: &Condition, variables: &[String]) -> Result<Cond, BuildError> {
    Ok(match c {
        Condition::Set(v) => Cond::Set(v.clone()),
        Condition::Equals { var, value, negate } => Cond::Equals {
            var: var.clone(),
            value: value.clone(),
            negate: *negate,
        },
        Condition::Matches {
            var,
            regex,
            case_insensitive,
            negate,
        } => Cond::Matches {
            var: var.clone(),
            matcher: Matcher::build(regex, *case_insensitive, variables)?,
            negate: *negate,
        },
        Condition::File { test, path, negate } => Cond::File {
            test: *test,
            path: path.clone(),
            negate: *negate,
        },
    })
}
