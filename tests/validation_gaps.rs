//! The last four params real SnowLuma 1.11.1 refuses with 1400 that the catalog used to
//! forward (found by sending it 4,515 bad-param variants). One test per bad variant: each is
//! refused before anything is sent, naming the field; next to them, the values SnowLuma
//! accepts still pass, so the rules are not stricter than SnowLuma.

use serde_json::{Map, Value, json};
use snowluma_mcp::catalog::resolve;

fn check(action: &str, params: Value) -> Result<(), String> {
    let params: Map<String, Value> = params.as_object().cloned().unwrap();
    resolve(action)
        .unwrap_or_else(|| panic!("{action} is in the catalog"))
        .meta
        .check_params(&params)
        .map_err(|e| e.to_string())
}

/// One `#[test]` per bad variant: `name: action, field, params`.
macro_rules! refused {
    ($($name:ident: $action:literal, $field:literal, $params:tt;)*) => {$(
        #[test]
        fn $name() {
            let error = check($action, json!($params))
                .expect_err(concat!($action, " must refuse ", stringify!($params)));
            assert!(
                error.starts_with(concat!($field, ": ")),
                "the error names `{}`: {error}",
                $field
            );
        }
    )*};
}

refused! {
    send_forward_msg_group_id_abc: "send_forward_msg", "group_id",
        {"message_type": "group", "group_id": "abc", "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]};
    send_forward_msg_group_id_true: "send_forward_msg", "group_id",
        {"message_type": "group", "group_id": true, "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]};
    send_forward_msg_group_id_empty_array: "send_forward_msg", "group_id",
        {"message_type": "group", "group_id": [], "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]};
    send_forward_msg_group_id_empty_object: "send_forward_msg", "group_id",
        {"message_type": "group", "group_id": {}, "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]};
    send_forward_msg_group_id_zero: "send_forward_msg", "group_id",
        {"message_type": "group", "group_id": 0, "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]};
    set_self_longnick_long_nick_zero: "set_self_longnick", "longNick", {"longNick": 0};
    set_self_longnick_long_nick_false: "set_self_longnick", "longNick", {"longNick": false};
    set_self_longnick_long_nick_object: "set_self_longnick", "longNick", {"longNick": {}};
    get_group_honor_info_type_zero: "get_group_honor_info", "type", {"group_id": 20001, "type": 0};
    get_group_honor_info_type_false: "get_group_honor_info", "type", {"group_id": 20001, "type": false};
    send_qzone_msg_ugc_right_hex_16: "send_qzone_msg", "target_uins", {"content": "hi", "ugc_right": "0x10"};
}

#[test]
fn what_snowluma_accepts_still_passes() {
    // send_forward_msg: any non-zero asNumber routes to the group; without message_type a
    // group_id that reads as 0 just skips the group branch (SnowLuma uploads the nodes).
    for ok in [json!(20001), json!("20001"), json!(" 0x4E21 "), json!(-5)] {
        let params = json!({"message_type": "group", "group_id": ok, "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]});
        assert_eq!(check("send_forward_msg", params), Ok(()), "{ok}");
    }
    let no_type = json!({"group_id": "abc", "messages": [{"type": "node", "data": {"user_id": 30001, "content": "hi"}}]});
    assert_eq!(check("send_forward_msg", no_type), Ok(()));
    // set_self_longnick: `longNick || long_nick` must be a string; "" is a string too.
    for ok in [
        json!({"longNick": "加油"}),
        json!({"long_nick": "加油"}),
        json!({"longNick": 0, "long_nick": "加油"}),
        json!({"longNick": "", "long_nick": ""}),
    ] {
        assert_eq!(check("set_self_longnick", ok.clone()), Ok(()), "{ok}");
    }
    for bad in [
        json!({}),
        json!({"longNick": ""}),
        json!({"longNick": {}, "long_nick": "x"}),
    ] {
        assert!(check("set_self_longnick", bad.clone()).is_err(), "{bad}");
    }
    // get_group_honor_info: `asString(type) || 'all'` must name a list; what asString reads
    // as "" (absent, null, objects, arrays) means all.
    for ok in [
        json!("talkative"),
        json!("all"),
        json!(""),
        json!(null),
        json!({}),
        json!([]),
    ] {
        let params = json!({"group_id": 20001, "type": ok});
        assert_eq!(check("get_group_honor_info", params), Ok(()), "{ok}");
    }
    assert_eq!(
        check("get_group_honor_info", json!({"group_id": 20001})),
        Ok(())
    );
    let strong = check(
        "get_group_honor_info",
        json!({"group_id": 20001, "type": "strong_newbie"}),
    );
    assert!(strong.unwrap_err().starts_with("type: "));
    // send_qzone_msg: "0x10" is 16 after coercion, so it needs target_uins like 16 does.
    let with_targets = json!({"content": "hi", "ugc_right": "0x10", "target_uins": [30001]});
    assert_eq!(check("send_qzone_msg", with_targets), Ok(()));
    assert_eq!(
        check(
            "send_qzone_msg",
            json!({"content": "hi", "ugc_right": "0x4"})
        ),
        Ok(())
    );
}
