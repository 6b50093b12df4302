//! `sticky cookie | route | learn` and `server ... route=` as they reach the model, and the
//! location-level `proxy_next_upstream_budget`.

mod common;

use std::time::Duration;

use common::http;
use ringfront_config::retry_budget::RetryBudget;
use ringfront_config::sticky::{CookieExpires, StickyMode};
use ringfront_config::{LocationMatch, Upstream};

fn group(body: &str) -> Upstream {
    let cfg = http(&format!(
        "upstream u {{\nserver 127.0.0.1:1 route=r1;\nserver 127.0.0.1:2;\n{body}\n}}\n\
         server {{ location / {{ proxy_pass http://u; }} }}"
    ));
    cfg.upstream("u").unwrap().clone()
}

#[test]
fn cookie_with_every_attribute() {
    let u = group(
        "sticky cookie srv \"expires=1h 3m\" domain=.a.example httponly secure \
         samesite=Lax path=/p;",
    );
    let s = u.sticky.unwrap();
    assert_eq!(s.lookup.len(), 1, "$cookie_srv");
    let StickyMode::Cookie(c) = s.mode else {
        panic!("cookie mode")
    };
    assert_eq!(c.name, "srv");
    assert_eq!(
        c.expires,
        Some(CookieExpires::After(Duration::from_secs(3780)))
    );
    assert!(c.domain.is_some() && c.samesite.is_some());
    assert_eq!(c.path.as_deref(), Some("/p"));
    assert!(c.httponly && c.secure);
    assert_eq!(
        group("sticky cookie s expires=max;")
            .sticky
            .map(|s| match s.mode {
                StickyMode::Cookie(c) => c.expires,
                _ => None,
            }),
        Some(Some(CookieExpires::Max))
    );
}

#[test]
fn routes_and_learn() {
    let u = group("sticky route $cookie_r $arg_r;");
    assert_eq!(u.servers[0].route.as_deref(), Some("r1"));
    assert_eq!(u.servers[1].route, None);
    let s = u.sticky.unwrap();
    assert_eq!((s.mode, s.lookup.len()), (StickyMode::Route, 2));
    let u = group(
        "sticky learn create=$upstream_cookie_a create=$upstream_cookie_b \
         lookup=$cookie_a zone=z:64k header;",
    );
    let s = u.sticky.unwrap();
    let StickyMode::Learn(l) = s.mode else {
        panic!("learn mode")
    };
    assert_eq!((l.create.len(), s.lookup.len()), (2, 1));
    assert_eq!((l.zone.as_str(), l.size), ("z", 64 * 1024));
    assert_eq!(l.timeout, Duration::from_secs(600));
    assert!(l.header && !l.sync);
    assert!(group("").sticky.is_none());
}

#[test]
fn the_budget_is_inherited_and_off_turns_it_off() {
    let cfg = http(
        "proxy_next_upstream_budget percent=25;\n\
         upstream u { server 127.0.0.1:1; }\n\
         server { location / { proxy_pass http://u; }\n\
                  location /off { proxy_pass http://u; proxy_next_upstream_budget off; }\n\
                  location /own { proxy_pass http://u; proxy_next_upstream_budget percent=5 min=0; } }",
    );
    let budget = |path: &str| {
        cfg.http.servers[0]
            .locations
            .iter()
            .find(|l| l.matcher == LocationMatch::Prefix(path.to_string()))
            .unwrap()
            .settings
            .proxy_next_upstream_budget
    };
    assert_eq!(
        budget("/"),
        Some(RetryBudget {
            percent: 25,
            min: 3
        })
    );
    assert_eq!(budget("/off"), None);
    assert_eq!(budget("/own"), Some(RetryBudget { percent: 5, min: 0 }));
}
