//! Property tests: the generated param checks accept exactly what SnowLuma's coercion accepts.
//!
//! The model here is built by construction rather than by re-parsing: each strategy produces a
//! value together with the number SnowLuma's JavaScript (`Number()` then `Math.trunc`) reads
//! from it, or `None` when SnowLuma refuses it. The checks under test are the generated ones
//! (`get_group_info.group_id` is a `uint`, `set_group_ban.duration` an `int` with minimum 0,
//! `get_msg.message_id` a `message_id`, `get_group_info.no_cache` a defaulted `bool`).

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use snowluma_mcp::catalog::resolve;

/// `Number.MAX_SAFE_INTEGER`; beyond it the catalog refuses on purpose (spec/README.md).
const SAFE: i64 = 9_007_199_254_740_991;

/// White space JavaScript's `trim` and `Number` strip (a sample, including the odd ones).
const JS_SPACE: &[&str] = &[
    "", " ", "\t", "\n", "\u{00A0}", "\u{FEFF}", "\u{3000}", "\u{2028}",
];

fn padded(text: String) -> impl Strategy<Value = String> {
    (
        prop::sample::select(JS_SPACE),
        prop::sample::select(JS_SPACE),
    )
        .prop_map(move |(l, r)| format!("{l}{text}{r}"))
}

/// Integers SnowLuma reads, in every spelling `Number()` accepts, with the integer it reads.
fn accepted_integer() -> impl Strategy<Value = (Value, i64)> {
    let n = -SAFE..=SAFE;
    prop_oneof![
        n.clone().prop_map(|n| (json!(n), n)),
        (n.clone(), any::<bool>()).prop_flat_map(|(n, plus)| {
            let text = if plus && n >= 0 {
                format!("+{n}")
            } else {
                n.to_string()
            };
            padded(text).prop_map(move |s| (json!(s), n))
        }),
        (0..=SAFE, 0..3usize, any::<bool>()).prop_flat_map(|(n, radix, upper)| {
            let text = match (radix, upper) {
                (0, false) => format!("0x{n:x}"),
                (0, true) => format!("0X{n:X}"),
                (1, false) => format!("0o{n:o}"),
                (1, true) => format!("0O{n:o}"),
                (_, false) => format!("0b{n:b}"),
                (_, true) => format!("0B{n:b}"),
            };
            padded(text).prop_map(move |s| (json!(s), n))
        }),
        // A fraction is truncated toward zero, as a JSON number or a string.
        (-1_000_000i64..1_000_000, 1..10u8, any::<bool>()).prop_map(|(n, tenth, as_text)| {
            let text = if n < 0 {
                format!("-{}.{tenth}", -n)
            } else {
                format!("{n}.{tenth}")
            };
            let value = if as_text {
                json!(text)
            } else {
                json!(text.parse::<f64>().unwrap())
            };
            (value, n)
        }),
        // Exponent forms: m e k with the exact integer m * 10^k.
        (-99_999i64..99_999, 0..6u32)
            .prop_map(|(m, k)| (json!(format!("{m}e{k}")), m * 10i64.pow(k))),
        (-99_999i64..99_999).prop_map(|m| (json!(format!("{m}00e-2")), m)),
    ]
}

/// Values SnowLuma's integer coercion refuses (and the catalog's 2^53 rule).
fn refused_integer() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        Just(json!([1])),
        Just(json!({ "n": 1 })),
        prop::sample::select(JS_SPACE).prop_map(|s| json!(s)),
        prop::sample::select(vec![
            "Infinity",
            "-Infinity",
            "+Infinity",
            "NaN",
            "infinity",
            "inf",
            ".",
            "1e",
            "e5",
            "0x",
            "0b",
            "0o",
            "0x1G",
            "0b102",
            "0o78",
            "--1",
            "+-1",
            "1 2",
            "12abc",
            "1_000",
            "1,000",
            "\u{0085}7",
            "٣",
        ])
        .prop_map(|s| json!(s)),
        (1..=SAFE).prop_map(|n| json!(format!("-0x{n:x}"))),
        (1..=SAFE).prop_map(|n| json!(format!("+0x{n:x}"))),
        (SAFE + 1..i64::MAX).prop_map(|n| json!(n)),
        (SAFE + 1..i64::MAX).prop_map(|n| json!(n.to_string())),
        (SAFE + 1..i64::MAX).prop_map(|n| json!(format!("0x{n:x}"))),
    ]
}

fn check(action: &str, params: Map<String, Value>) -> Result<(), String> {
    resolve(action)
        .unwrap()
        .meta
        .check_params(&params)
        .map_err(|e| e.to_string())
}

fn with(key: &str, value: Value, base: Value) -> Map<String, Value> {
    let mut params = base.as_object().cloned().unwrap_or_default();
    params.insert(key.into(), value);
    params
}

fn uint(value: Value) -> Result<(), String> {
    check("get_group_info", with("group_id", value, json!({})))
}

fn non_negative_int(value: Value) -> Result<(), String> {
    let base = json!({ "group_id": 20001, "user_id": 30001 });
    check("set_group_ban", with("duration", value, base))
}

fn message_id(value: Value) -> Result<(), String> {
    check("get_msg", with("message_id", value, json!({})))
}

fn flag(value: Value) -> Result<(), String> {
    check(
        "get_group_info",
        with("no_cache", value, json!({ "group_id": 1 })),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn integers_are_accepted_exactly_when_snowluma_reads_them((value, n) in accepted_integer()) {
        prop_assert_eq!(uint(value.clone()).is_ok(), n >= 1, "uint {}", value);
        prop_assert_eq!(non_negative_int(value.clone()).is_ok(), n >= 0, "int {}", value);
        prop_assert_eq!(message_id(value.clone()).is_ok(), n != 0, "message_id {}", value);
    }

    #[test]
    fn values_snowluma_cannot_read_are_refused(value in refused_integer()) {
        prop_assert!(uint(value.clone()).is_err(), "uint {}", value);
        prop_assert!(non_negative_int(value.clone()).is_err(), "int {}", value);
        prop_assert!(message_id(value.clone()).is_err(), "message_id {}", value);
    }

    #[test]
    fn arbitrary_text_never_panics_and_needs_a_digit(text in "\\PC{0,12}") {
        if uint(json!(text)).is_ok() {
            prop_assert!(text.chars().any(|c| c.is_ascii_digit()), "{:?}", text);
        }
    }

    #[test]
    fn booleans_follow_snowluma(
        word in prop::sample::select(vec!["true", "1", "yes", "on", "false", "0", "no", "off"]),
        upper in any::<bool>(),
        pad in prop::sample::select(JS_SPACE),
    ) {
        let word = if upper { word.to_uppercase() } else { word.to_string() };
        let text = format!("{pad}{word}{pad}");
        prop_assert!(flag(json!(text)).is_ok(), "{:?}", text);
    }

    #[test]
    fn other_words_are_not_booleans(word in "[a-z2-9]{1,6}") {
        let known = ["true", "yes", "on", "false", "no", "off"];
        prop_assume!(!known.contains(&word.as_str()));
        prop_assert!(flag(json!(word)).is_err());
    }

    #[test]
    fn any_json_number_is_a_boolean(n in any::<f64>().prop_filter("finite", |n| n.is_finite())) {
        prop_assert!(flag(json!(n)).is_ok());
    }
}

#[test]
fn absent_is_missing_but_null_is_an_invalid_value() {
    assert_eq!(
        check("get_msg", Map::new()).unwrap_err(),
        "message_id: is required"
    );
    assert!(message_id(json!(null)).is_err());
    // An absent optional bool takes its default; a null one is refused.
    assert!(check("get_group_info", with("group_id", json!(1), json!({}))).is_ok());
    assert!(flag(json!(null)).is_err());
    for bad in [json!(null), json!([]), json!({})] {
        assert!(flag(bad.clone()).is_err(), "{bad}");
    }
}

#[test]
fn beyond_two_to_the_53_the_refusal_says_why() {
    let reason = uint(json!(9_007_199_254_740_993u64)).unwrap_err();
    assert!(reason.starts_with("group_id: "), "{reason}");
    assert!(reason.contains("2^53"), "{reason}");
    assert!(uint(json!(SAFE)).is_ok());
    assert!(uint(json!(SAFE.to_string())).is_ok());
    assert!(message_id(json!(-SAFE)).is_ok());
}
