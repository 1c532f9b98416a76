//! Keyword search quality: realistic queries, the way users ask, each with the action that
//! must rank in the top 3. Two sets are scored apart: the tuning set (`QUERIES`), which the
//! synonym table was grown against, and a held-out set (`HELD_OUT`), written from the action
//! summaries without reading the synonym table and never used to tune it. The top-1 and
//! top-3 rates of both are printed (run with --nocapture).
//!
//! The larger sets of issue 43 live in tests/search_sets/ (dev.txt, the development set the
//! search is tuned against; heldout.txt, written before any tuning and never tuned on) and are
//! scored by tests/support/search_sets.rs, which the bench driver prints as well.

#[path = "support/search_sets.rs"]
mod search_sets;

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

/// Held out: phrased from what each action's summary says it does, as a user would ask,
/// without looking at the synonym table. Do not add synonyms to make these pass; a miss here
/// is a measurement, not a bug report.
const HELD_OUT: &[(&str, &str)] = &[
    // Chinese
    ("把这个人禁言一小时", "set_group_ban"),
    ("解除某人的禁言", "set_group_ban"),
    ("开启全体禁言", "set_group_whole_ban"),
    ("把他移出群聊", "set_group_kick"),
    ("批量踢出成员", "set_group_kick_members"),
    ("撤回刚才那条消息", "delete_msg"),
    ("退出这个群", "set_group_leave"),
    ("修改群名称", "set_group_name"),
    ("换群头像", "set_group_portrait"),
    ("设置专属头衔", "set_group_special_title"),
    ("任命管理员", "set_group_admin"),
    ("同意加好友申请", "set_friend_add_request"),
    ("拒绝入群邀请", "set_group_add_request"),
    ("删掉这个好友", "delete_friend"),
    ("查看群公告", "_get_group_notice"),
    ("在群里发一条公告", "_send_group_notice"),
    ("语音转成文字", "fetch_ptt_text"),
    ("识别图片中的文字", "ocr_image"),
    ("英文翻译成中文", "translate_en2zh"),
    ("给他的资料卡点个赞", "send_like"),
    ("戳一戳群成员", "group_poke"),
    ("设为精华消息", "set_essence_msg"),
    ("精华消息列表", "get_essence_msg_list"),
    ("群荣誉龙王", "get_group_honor_info"),
    ("把文件传到群文件里", "upload_group_file"),
    ("群文件下载链接", "get_group_file_url"),
    ("新建群文件夹", "create_group_file_folder"),
    ("群相册列表", "get_group_album_list"),
    ("发表说说", "send_qzone_msg"),
    ("删除说说", "delete_qzone_msg"),
    ("修改个性签名", "set_self_longnick"),
    ("更换头像", "set_qq_avatar"),
    ("好友备注", "set_friend_remark"),
    ("群聊历史记录", "get_group_msg_history"),
    ("当前登录账号", "get_login_info"),
    ("被禁言的成员有哪些", "get_group_shut_list"),
    ("在群里签到", "set_group_sign"),
    ("合并转发消息内容", "get_forward_msg"),
    ("设置在线状态", "set_online_status"),
    ("正在输入状态", "set_input_status"),
    // English
    ("mute a member for ten minutes", "set_group_ban"),
    ("kick user out of group", "set_group_kick"),
    ("recall message", "delete_msg"),
    ("leave the group", "set_group_leave"),
    ("change group name", "set_group_name"),
    ("make someone admin", "set_group_admin"),
    ("accept friend request", "set_friend_add_request"),
    ("show all my friends", "get_friend_list"),
    ("members of a group", "get_group_member_list"),
    ("who am i logged in as", "get_login_info"),
    ("speech to text for a voice message", "fetch_ptt_text"),
    ("read text from an image", "ocr_image"),
    ("translate english words", "translate_en2zh"),
    ("send a direct message to a user", "send_private_msg"),
    ("post to group chat", "send_group_msg"),
    ("upload a file to the group", "upload_group_file"),
    ("download url of a group file", "get_group_file_url"),
    ("group announcements", "_get_group_notice"),
    ("nudge my friend", "friend_poke"),
    ("pin a message as essence", "set_essence_msg"),
    ("chat history of a group", "get_group_msg_history"),
    ("change my avatar", "set_qq_avatar"),
    ("typing indicator", "set_input_status"),
    ("rename a file in group files", "rename_group_file"),
    ("delete a qzone post", "delete_qzone_msg"),
    ("like a shuoshuo", "like_qzone"),
    ("emoji reaction on a group message", "set_group_reaction"),
    ("version of the onebot implementation", "get_version_info"),
    ("is the bot online", "get_status"),
    ("send a raw packet", "send_packet"),
    // Mixed
    ("群 mute", "set_group_ban"),
    ("踢 member", "set_group_kick"),
    ("group 公告", "_get_group_notice"),
    ("qzone 说说 列表", "get_qzone_msg_list"),
    ("friend 列表", "get_friend_list"),
    ("群文件 upload", "upload_group_file"),
    ("OCR 图片", "ocr_image"),
    ("AI 语音 群", "send_group_ai_record"),
    ("精华 message", "set_essence_msg"),
    ("撤回 a message", "delete_msg"),
];

/// Floors for the held-out set, a little under its first measurement (73.8% / 83.8%); the
/// search was not tuned against it.
const HELD_OUT_TOP1: f64 = 0.70;
const HELD_OUT_TOP3: f64 = 0.80;

/// Top-1 and top-3 hits of a query set, and the misses (not in the top 3) for the report.
fn score(queries: &[(&str, &str)]) -> (f64, f64, Vec<String>) {
    let (mut top1, mut top3) = (0, 0);
    let mut misses = Vec::new();
    for (query, expected) in queries {
        assert!(
            ACTIONS.iter().any(|a| a.name == *expected),
            "unknown expected action {expected}"
        );
        let found = search::keywords(query);
        let names: Vec<&str> = found
            .results
            .iter()
            .take(3)
            .map(|s| ACTIONS[s.action].name)
            .collect();
        if names.first() == Some(expected) {
            top1 += 1;
        }
        if names.contains(expected) {
            top3 += 1;
        } else {
            misses.push(format!(
                "{query:?}: expected {expected}, got {names:?} (terms {:?}, unmatched {:?})",
                found.terms, found.unmatched_terms
            ));
        }
    }
    let total = queries.len() as f64;
    (top1 as f64 / total, top3 as f64 / total, misses)
}

fn report(label: &str, queries: &[(&str, &str)], top1: f64, top3: f64, misses: &[String]) {
    println!(
        "keyword search, {label}: {} queries, top-1 {:.1}%, top-3 {:.1}%",
        queries.len(),
        100.0 * top1,
        100.0 * top3
    );
    for miss in misses {
        println!("  miss {miss}");
    }
}

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

    let (top1, top3, misses) = score(QUERIES);
    report("tuning set", QUERIES, top1, top3, &misses);
    assert!(
        top3 >= 0.95,
        "tuning top-3 below 95%:\n{}",
        misses.join("\n")
    );
}

#[test]
fn held_out_queries_are_scored_separately() {
    assert!(HELD_OUT.len() >= 60, "{} held-out queries", HELD_OUT.len());
    let tuning: Vec<&str> = QUERIES.iter().map(|(q, _)| *q).collect();
    for (query, _) in HELD_OUT {
        assert!(
            !tuning.contains(query),
            "{query:?} is also in the tuning set"
        );
    }
    let (top1, top3, misses) = score(HELD_OUT);
    report("held-out set", HELD_OUT, top1, top3, &misses);
    assert!(
        top1 >= HELD_OUT_TOP1 && top3 >= HELD_OUT_TOP3,
        "held-out top-1 {top1:.3} / top-3 {top3:.3} below {HELD_OUT_TOP1} / {HELD_OUT_TOP3}:\n{}",
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
        let first = &ACTIONS[found.results[0].action];
        assert!(
            first.name == name || first.aliases.contains(&name),
            "{name}: got {}",
            first.name
        );
    }
}

#[test]
fn an_unknown_term_empties_the_results_and_is_reported() {
    let found = search::keywords("mute xyzzyplugh");
    assert!(found.results.is_empty(), "AND: xyzzyplugh matches nothing");
    assert_eq!(found.unmatched_terms, vec!["xyzzyplugh".to_string()]);
    assert!(found.terms.contains(&"xyzzyplugh".to_string()));
    let names: Vec<&str> = found
        .suggestions
        .iter()
        .map(|s| ACTIONS[s.action].name)
        .collect();
    assert!(names.contains(&"set_group_ban"), "{names:?}");
    for suggestion in &found.suggestions {
        assert_eq!(suggestion.matched_terms, vec!["mute".to_string()]);
    }
    let alone = search::keywords("xyzzyplugh");
    assert!(alone.results.is_empty() && alone.suggestions.is_empty());
    assert_eq!(alone.unmatched_terms, vec!["xyzzyplugh".to_string()]);
}

#[test]
fn known_terms_that_never_meet_give_suggestions_not_results() {
    // Both words are in the catalog, but no single action is about both.
    let found = search::keywords("禁言 说说");
    assert!(found.results.is_empty());
    assert!(found.unmatched_terms.is_empty());
    assert!(!found.suggestions.is_empty());
    for suggestion in &found.suggestions {
        assert_eq!(
            suggestion.matched_terms.len(),
            1,
            "partial: one of two terms"
        );
    }
    let entries = found.suggestion_entries(&Default::default());
    assert!(entries.len() <= 5);
    assert!(
        entries
            .iter()
            .all(|e| e.partial && e.matched_terms.len() == 1)
    );
}

#[test]
fn every_result_matches_every_term() {
    for query in ["group member", "群 文件 删除", "qzone like"] {
        let found = search::keywords(query);
        assert!(!found.results.is_empty(), "{query}");
        assert!(found.suggestions.is_empty(), "{query}");
        for result in &found.results {
            assert_eq!(result.matched_terms, found.terms, "{query}");
        }
    }
}

/// Floors a little under the development set's measurement (top-1 91.8%, top-3 98.5%).
const DEVELOPMENT_TOP1: f64 = 0.87;
const DEVELOPMENT_TOP3: f64 = 0.96;
/// Floors under the held-out set's measurement. The target is top-1 95% and top-3
/// 99%; the measured figure is what README reports, and these only catch a regression.
const HELD_OUT_SET_TOP1: f64 = 0.75;
const HELD_OUT_SET_TOP3: f64 = 0.85;

#[test]
fn the_development_set_is_scored_with_top1_top3_and_mrr() {
    let cases = search_sets::parse(search_sets::DEVELOPMENT);
    assert!(cases.len() >= 150, "{} development queries", cases.len());
    for kind in ["en", "zh", "mixed", "sentence", "fragment", "typo"] {
        assert!(cases.iter().any(|c| c.kind == kind), "no {kind} query");
    }
    let score = search_sets::score(&cases);
    println!("{}", score.line("development set"));
    for miss in &score.misses {
        println!("  miss {miss}");
    }
    assert!(
        score.top1 >= DEVELOPMENT_TOP1 && score.top3 >= DEVELOPMENT_TOP3,
        "{}:\n{}",
        score.line("development set"),
        score.misses.join("\n")
    );
}

#[test]
fn the_held_out_set_is_scored_apart_and_shares_no_query() {
    let held_out = search_sets::parse(search_sets::HELD_OUT);
    assert!(held_out.len() >= 60, "{} held-out queries", held_out.len());
    let development = search_sets::parse(search_sets::DEVELOPMENT);
    for case in &held_out {
        assert!(
            development.iter().all(|d| d.query != case.query),
            "{:?} is in both sets",
            case.query
        );
    }
    let score = search_sets::score(&held_out);
    println!("{}", score.line("held-out set"));
    assert!(
        score.top1 >= HELD_OUT_SET_TOP1 && score.top3 >= HELD_OUT_SET_TOP3,
        "{}",
        score.line("held-out set")
    );
}

fn names(results: &[search::Scored]) -> Vec<&'static str> {
    results.iter().map(|s| ACTIONS[s.action].name).collect()
}

#[test]
fn stop_words_in_both_languages_are_dropped_and_reported() {
    let found = search::keywords("who am I logged in as");
    for word in ["who", "am", "i", "in", "as"] {
        assert!(
            found.ignored_terms.contains(&word.to_string()),
            "{word} not ignored: {:?}",
            found.ignored_terms
        );
    }
    assert_eq!(found.terms, ["logged"]);
    assert_eq!(names(&found.results)[0], "get_login_info");

    let found = search::keywords("给好友点赞");
    assert_eq!(
        found.terms,
        ["好友", "点赞"],
        "jieba keeps 好友 and 点赞 whole"
    );
    assert_eq!(found.ignored_terms, ["给"]);
    assert_eq!(names(&found.results)[0], "send_like");

    let found = search::keywords("帮我退出这个群");
    assert_eq!(found.terms, ["退出", "群"]);
    assert_eq!(names(&found.results)[0], "set_group_leave");
}

#[test]
fn a_query_of_only_stop_words_falls_back_to_substring_search() {
    let found = search::keywords("as");
    assert!(found.substring_fallback);
    assert!(found.terms.is_empty());
    assert_eq!(found.ignored_terms, ["as"]);
    let expected = search::substring("as");
    assert!(!expected.is_empty());
    let got: Vec<usize> = found.results.iter().map(|s| s.action).collect();
    assert_eq!(
        got, expected,
        "the substring search's results, in its order"
    );
    assert!(names(&found.results).contains(&"mark_group_msg_as_read"));
}

#[test]
fn english_words_match_through_their_stems() {
    for (inflected, plain) in [
        ("members", "member"),
        ("messages", "message"),
        ("muted", "mute"),
    ] {
        let a = names(&search::keywords(&format!("group {inflected}")).results);
        let b = names(&search::keywords(&format!("group {plain}")).results);
        assert!(!a.is_empty(), "{inflected}");
        assert_eq!(a, b, "{inflected} / {plain}");
    }
}

#[test]
fn name_fragments_match_runs_of_name_parts() {
    let three = [
        "send_group_msg",
        "get_group_msg_history",
        "mark_group_msg_as_read",
    ];
    for query in ["group_msg", "groupmsg", "group msg"] {
        let found = search::keywords(query);
        let names = names(&found.results);
        for name in three {
            assert!(names.contains(&name), "{query}: {names:?}");
        }
        let top: Vec<&str> = names.iter().take(3).copied().collect();
        assert!(
            three.iter().all(|n| top.contains(n)),
            "{query}: the three name matches rank first, got {names:?}"
        );
    }
    // Parts in another order are not a run of any name: they fall back to plain words.
    let found = search::keywords("msg_group");
    assert_eq!(found.terms, ["msg", "group"]);
}

#[test]
fn misspelled_words_are_read_as_the_nearest_catalog_word_and_reported() {
    let found = search::keywords("sned private msg");
    assert_eq!(found.corrected_terms, ["sned -> send"]);
    assert_eq!(names(&found.results)[0], "send_private_msg");
    let found = search::keywords("get_grup_list");
    assert_eq!(found.corrected_terms, ["grup -> group"]);
    assert_eq!(names(&found.results)[0], "get_group_list");
    // Ordinary short words are left alone.
    let found = search::keywords("find friends");
    assert!(
        found.corrected_terms.is_empty(),
        "{:?}",
        found.corrected_terms
    );
}
