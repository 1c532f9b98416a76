//! Keyword search quality: realistic queries, the way users ask, each with the action that
//! must rank in the top 3. The top-1 and top-3 rates are printed (run with --nocapture).

use snowluma_mcp::catalog::{ACTIONS, search};

const QUERIES: &[(&str, &str)] = &[
    // Chinese
    ("群 禁言", "set_group_ban"),
    ("禁言群成员", "set_group_ban"),
    ("全员禁言", "set_group_whole_ban"),
    ("踢人", "set_group_kick"),
    ("把人踢出群", "set_group_kick"),
    ("撤回消息", "delete_msg"),
    ("发送群消息", "send_group_msg"),
    ("发私聊消息", "send_private_msg"),
    ("修改群名片", "set_group_card"),
    ("好友列表", "get_friend_list"),
    ("群列表", "get_group_list"),
    ("群成员列表", "get_group_member_list"),
    ("群成员信息", "get_group_member_info"),
    ("设置管理员", "set_group_admin"),
    ("发布群公告", "_send_group_notice"),
    ("设置精华消息", "set_essence_msg"),
    ("戳一戳 好友", "friend_poke"),
    ("修改头像", "set_qq_avatar"),
    ("群头像", "set_group_portrait"),
    ("上传群文件", "upload_group_file"),
    ("语音转文字", "fetch_ptt_text"),
    ("获取图片", "get_image"),
    ("退群", "set_group_leave"),
    ("同意加群请求", "set_group_add_request"),
    ("同意好友请求", "set_friend_add_request"),
    ("登录账号信息", "get_login_info"),
    ("版本信息", "get_version_info"),
    ("群荣誉", "get_group_honor_info"),
    ("合并转发", "send_forward_msg"),
    ("个性签名", "set_self_longnick"),
    ("群专属头衔", "set_group_special_title"),
    ("群 聊天记录", "get_group_msg_history"),
    ("给好友点赞", "send_like"),
    ("删除好友", "delete_friend"),
    // English
    ("mute someone in a group", "set_group_ban"),
    ("kick a member out of the group", "set_group_kick"),
    ("recall a message", "delete_msg"),
    ("send a private message", "send_private_msg"),
    ("send group message", "send_group_msg"),
    ("list my friends", "get_friend_list"),
    ("list groups", "get_group_list"),
    ("group member list", "get_group_member_list"),
    ("get member info", "get_group_member_info"),
    ("change group card", "set_group_card"),
    ("set group admin", "set_group_admin"),
    ("mute all members", "set_group_whole_ban"),
    ("post a group notice", "_send_group_notice"),
    ("poke a friend", "friend_poke"),
    ("upload file to group", "upload_group_file"),
    ("download a file", "download_file"),
    ("voice to text", "fetch_ptt_text"),
    ("get image", "get_image"),
    ("leave group", "set_group_leave"),
    ("approve friend request", "set_friend_add_request"),
    ("approve group join request", "set_group_add_request"),
    ("login info", "get_login_info"),
    ("bot version", "get_version_info"),
    ("group honor", "get_group_honor_info"),
    ("forward messages", "send_forward_msg"),
    ("set avatar", "set_qq_avatar"),
    ("group message history", "get_group_msg_history"),
    ("set essence message", "set_essence_msg"),
    ("special title", "set_group_special_title"),
    ("stream download", "download_file_stream"),
    ("ocr image", "ocr_image"),
    ("translate english to chinese", "translate_en2zh"),
    // Mixed
    ("group 禁言", "set_group_ban"),
    ("发送 group msg", "send_group_msg"),
    ("好友 list", "get_friend_list"),
    ("upload 群文件", "upload_group_file"),
    ("撤回 message", "delete_msg"),
];

#[test]
fn keyword_search_ranks_the_expected_action_in_the_top_three() {
    assert!(QUERIES.len() >= 60);
    let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    let chinese = QUERIES
        .iter()
        .filter(|(q, _)| cjk(q) && !q.chars().any(|c| c.is_ascii_alphabetic()))
        .count();
    let english = QUERIES.iter().filter(|(q, _)| !cjk(q)).count();
    assert!(
        chinese >= 30 && english >= 30,
        "{chinese} Chinese, {english} English"
    );

    let (mut top1, mut top3) = (0, 0);
    let mut misses = Vec::new();
    for (query, expected) in QUERIES {
        assert!(
            ACTIONS.iter().any(|a| a.name == *expected),
            "unknown expected action {expected}"
        );
        let found = search::keywords(query);
        let names: Vec<&str> = found
            .hits
            .iter()
            .take(3)
            .map(|(i, _)| ACTIONS[*i].name)
            .collect();
        if names.first() == Some(expected) {
            top1 += 1;
        }
        if names.contains(expected) {
            top3 += 1;
        } else {
            misses.push(format!(
                "{query:?}: expected {expected}, got {names:?} (terms {:?}, ignored {:?})",
                found.terms, found.ignored
            ));
        }
    }
    let total = QUERIES.len() as f64;
    println!(
        "keyword search: {} queries, top-1 {:.1}%, top-3 {:.1}%",
        QUERIES.len(),
        100.0 * top1 as f64 / total,
        100.0 * top3 as f64 / total
    );
    for miss in &misses {
        println!("  miss {miss}");
    }
    assert!(
        top3 as f64 / total >= 0.95,
        "top-3 rate below 95%:\n{}",
        misses.join("\n")
    );
}

#[test]
fn substring_search_keeps_catalog_order_and_is_case_insensitive() {
    let upper = search::substring("GROUP_BAN");
    let lower = search::substring("group_ban");
    assert_eq!(upper, lower);
    assert!(upper.windows(2).all(|w| w[0] < w[1]), "catalog order");
    assert!(upper.iter().any(|i| ACTIONS[*i].name == "set_group_ban"));
}

#[test]
fn exact_names_and_aliases_rank_first() {
    for name in ["send_msg", "get_ptt_text", "set_group_ban", ".ocr_image"] {
        let found = search::keywords(name);
        let first = &ACTIONS[found.hits[0].0];
        assert!(
            first.name == name || first.aliases.contains(&name),
            "{name}: got {}",
            first.name
        );
    }
}

#[test]
fn unknown_terms_are_reported_not_matched() {
    let found = search::keywords("mute xyzzyplugh");
    assert_eq!(found.ignored, vec!["xyzzyplugh".to_string()]);
    assert!(!found.hits.is_empty());
    assert!(search::keywords("xyzzyplugh").hits.is_empty());
}
