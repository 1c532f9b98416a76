//! Keyword search quality over the query sets in tests/search_sets/: dev.txt, the
//! development set the search is tuned against, and heldout.txt, written before any tuning
//! and never tuned on. Both are scored by tests/support/search_sets.rs (top-1, top-3, MRR),
//! which the benches print as well; run with --nocapture to see the figures.

#[path = "support/search_sets.rs"]
mod search_sets;

use snowluma_mcp::catalog::{ACTIONS, search};

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
        // Each term searched alone finds every result of the whole query.
        for term in &found.terms {
            let alone: Vec<usize> = search::keywords(term)
                .results
                .iter()
                .map(|s| s.action)
                .collect();
            for result in &found.results {
                assert!(alone.contains(&result.action), "{query}: {term}");
                assert!(result.matched_terms.is_empty(), "a result lists no terms");
            }
        }
    }
}

/// Floors a little under the development set's measurement (top-1 96.9%, top-3 99.0%, over
/// 2,300 queries).
const DEVELOPMENT_TOP1: f64 = 0.96;
const DEVELOPMENT_TOP3: f64 = 0.98;
/// The targets on the held-out set (measured: top-1 96.8%, top-3 100%).
const HELD_OUT_SET_TOP1: f64 = 0.95;
const HELD_OUT_SET_TOP3: f64 = 0.99;

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
    let unseen = search_sets::unseen(search_sets::parse(search_sets::HELD_OUT));
    let seen = held_out.len() - unseen.len();
    let listed = search_sets::HELD_OUT_SEEN
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .count();
    assert_eq!(
        seen, listed,
        "every query of heldout_seen.txt is a held-out query"
    );
    println!(
        "{}",
        search_sets::score(&unseen).line("held-out set, unseen queries")
    );
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

/// Quoted text is what the action is given (a message, a new name), not what it does: it is
/// left out of the AND and reported with the ignored words.
#[test]
fn quoted_text_is_left_out_and_reported() {
    let found = search::keywords("send \"mute everyone now\" to group 12345");
    assert_eq!(found.terms, ["send", "group"]);
    assert!(
        found
            .ignored_terms
            .contains(&"mute everyone now".to_string())
    );
    assert_eq!(names(&found.results)[0], "send_group_msg");
    let found = search::keywords("给好友发一句「在吗」");
    assert!(
        !found.terms.iter().any(|t| t.contains('在')),
        "{:?}",
        found.terms
    );
    assert!(found.ignored_terms.contains(&"在吗".to_string()));
    // A query that is only quoted text is searched as it is.
    let found = search::keywords("\"group_msg\"");
    assert_eq!(found.terms, ["group_msg"]);
    // An unclosed quote is punctuation.
    let found = search::keywords("\"mute member");
    assert_eq!(found.terms, ["mute", "member"]);
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
        let mut a = names(&search::keywords(&format!("group {inflected}")).results);
        let mut b = names(&search::keywords(&format!("group {plain}")).results);
        assert!(!a.is_empty(), "{inflected}");
        // The same actions match; the order may differ (`muted` names a state, so it reads).
        a.sort_unstable();
        b.sort_unstable();
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
    // A four-letter word missing a letter inside it.
    let found = search::keywords("grup msg history");
    assert_eq!(found.corrected_terms, ["grup -> group"]);
    assert_eq!(names(&found.results)[0], "get_group_msg_history");
    // A three-letter word too.
    let found = search::keywords("kik member");
    assert_eq!(found.corrected_terms, ["kik -> kick"]);
    assert_eq!(names(&found.results)[0], "set_group_kick");
    // Ordinary short words are left alone, also where a letter at either end would make a
    // catalog word (block, model).
    assert_nothing_corrected(&["find friends", "lock", "mode", "bot", "new", "add"]);
}

/// In a long query one stray word should not hide the action the rest is about: when the
/// best partial match holds three terms or more, actions holding one fewer are suggested too.
#[test]
fn a_long_query_s_suggestions_may_miss_one_term_more_than_the_best() {
    let found = search::keywords("mark my private chat as read up to the latest message");
    assert!(found.results.is_empty(), "no action holds every term");
    let matched: Vec<usize> = found
        .suggestions
        .iter()
        .map(|s| s.matched_terms.len())
        .collect();
    let best = *matched.iter().max().unwrap();
    assert!(best >= 3, "{matched:?}");
    assert!(matched.iter().all(|&m| m + 1 >= best), "{matched:?}");
    assert_eq!(
        names(&found.suggestions)[0],
        "mark_private_msg_as_read",
        "matches one term fewer than get_friend_msg_history, and is what the query asks"
    );
    // Two terms that never meet: every suggestion still holds the best count.
    let found = search::keywords("禁言 说说");
    assert!(found.suggestions.iter().all(|s| s.matched_terms.len() == 1));
}

/// None of these queries has a word read as another.
fn assert_nothing_corrected(queries: &[&str]) {
    for query in queries {
        let found = search::keywords(query);
        assert!(
            found.corrected_terms.is_empty(),
            "{query}: {:?}",
            found.corrected_terms
        );
    }
}

/// A pinyin input method turns a misspelling into a real character that sounds right:
/// such text is read as the catalog word it sounds like, and reported; real words are not.
#[test]
fn chinese_typos_that_sound_like_a_catalog_word_are_read_as_it_and_reported() {
    for (query, fix, first) in [
        ("撤会消息", "撤会消息 -> 撤回消息", "delete_msg"),
        ("进言", "进言 -> 禁言", "set_group_ban"),
        (
            "群成圆列表",
            "成圆列表 -> 成员列表",
            "get_group_member_list",
        ),
        ("看群工告", "群工告 -> 群公告", "_get_group_notice"),
    ] {
        let found = search::keywords(query);
        assert_eq!(found.corrected_terms, [fix], "{query}");
        assert_eq!(names(&found.results)[0], first, "{query}");
    }
    // Common words that sound like a catalog word one character apart (接受, 通畅), a rare
    // reading (还 can be read fu, like 不), and text that sounds like a catalog word only
    // with part of an unknown word (步到 in 同步到) are all left alone.
    assert_nothing_corrected(&[
        "接收文件",
        "通常怎么禁言",
        "机器人还在线吗",
        "被实时同步到的私聊消息",
    ]);
}

#[test]
fn what_the_query_wants_done_puts_reads_or_writes_first() {
    // Asking to look (看看, a stop word; 查看, a read word of the spec's intents) puts the read
    // first, which a bare noun does not.
    let bare = search::keywords("收藏表情");
    assert!(
        !ACTIONS[bare.results[0].action].read_only,
        "{:?}",
        names(&bare.results)
    );
    for query in ["看看收藏表情", "查看 收藏表情"] {
        let found = search::keywords(query);
        assert_eq!(names(&found.results)[0], "fetch_custom_face", "{query}");
    }
    // A state (`muted members`) is looked up; the imperative (`mute members`) is done.
    let found = search::keywords("muted members");
    assert_eq!(names(&found.results)[0], "get_group_shut_list");
    assert!(names(&found.results).contains(&"set_group_ban"));
    let found = search::keywords("mute members");
    assert_eq!(names(&found.results)[0], "set_group_ban");
    // A write word (上传 / upload, from the spec's intents and its synonyms) puts writes first.
    let found = search::keywords("上传 收藏表情");
    assert_eq!(names(&found.results)[0], "add_custom_face");
    let found = search::keywords("upload favorite sticker");
    assert!(
        !ACTIONS[found.results[0].action].read_only,
        "{:?}",
        names(&found.results)
    );
    // A question reads, even when it names a write (`muted`, a synonym of 禁言).
    let found = search::keywords("who is muted");
    assert_eq!(names(&found.results)[0], "get_group_shut_list");
    let found = search::keywords("能不能发图片");
    assert_eq!(names(&found.results)[0], "can_send_image");
}

/// The first action a client sees for a query: the first result, or the first suggestion.
fn first_answer(query: &str) -> &'static str {
    search_sets::answers(query)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("{query}: nothing found"))
}

/// The stem matches both, but the query's number tells one member from several.
#[test]
fn a_singular_word_prefers_the_action_named_in_the_singular() {
    assert_eq!(first_answer("kick member"), "set_group_kick");
    assert_eq!(first_answer("kick members"), "set_group_kick_members");
}

/// A plural or a word for many (哪些, 这几个, these) leans towards lists and actions named
/// in the plural; `how many` asks for a count and does not.
#[test]
fn asking_about_several_things_puts_lists_and_batches_first() {
    assert_eq!(first_answer("我在哪些群"), "get_group_list");
    assert_eq!(first_answer("群里能用的AI声线有哪些"), "get_ai_characters");
    assert_eq!(
        first_answer("把这几个人一起踢出群"),
        "set_group_kick_members"
    );
    assert_eq!(first_answer("把他踢出群"), "set_group_kick");
}

/// File names, addresses and ids are values the action is given: they are reported as
/// ignored, never corrected into catalog words; an address's catalog words still hint.
#[test]
fn file_names_addresses_and_ids_are_values() {
    let found = search::keywords("send report.pdf to my friend as a file");
    assert!(found.ignored_terms.contains(&"report.pdf".to_string()));
    assert!(
        found.corrected_terms.is_empty(),
        "{:?}",
        found.corrected_terms
    );
    assert_eq!(names(&found.results)[0], "upload_private_file");
    let found = search::keywords("upload https://example.com/a.zip to the group");
    assert!(
        found
            .ignored_terms
            .contains(&"https://example.com/a.zip".to_string())
    );
    assert_eq!(found.terms, ["upload", "group"]);
    let found = search::keywords("approve friend request u_8f3kq2");
    assert!(found.ignored_terms.contains(&"8f3kq2".to_string()));
    assert_eq!(names(&found.results)[0], "set_friend_add_request");
    // A word the catalog knows stays, digits and all; a leading dot starts an alias.
    assert_eq!(search::keywords("base64 image").terms, ["base64", "image"]);
    assert_eq!(first_answer(".ocr_image"), "ocr_image");
}

/// `check in` and `one-way` are the catalog words `checkin` and `oneway`; `who is` stays
/// two stop words.
#[test]
fn a_verb_and_its_particle_or_a_hyphenated_word_are_one_word() {
    assert_eq!(
        search::keywords("check in today").terms,
        ["checkin", "today"]
    );
    assert_eq!(
        first_answer("check in for today in group 123"),
        "set_group_sign"
    );
    assert_eq!(
        search::keywords("one-way friends").terms,
        ["oneway", "friends"]
    );
    assert_eq!(search::keywords("who is muted").terms, ["muted"]);
}

/// In a request of several clauses the one that asks decides; the others tell the story.
/// A clause that says what not to do is left out.
#[test]
fn the_clause_that_asks_decides_and_a_negated_clause_is_left_out() {
    let story = "他发了条语音，我不方便听，帮我转成文字";
    assert_eq!(first_answer(story), "fetch_ptt_text");
    let found = search::keywords("把这条消息单独转发给好友，不要合并转发");
    assert!(
        found.ignored_terms.contains(&"合并".to_string()),
        "{:?}",
        found.ignored_terms
    );
    assert!(!found.terms.contains(&"合并".to_string()));
    assert_eq!(names(&found.results)[0], "forward_friend_single_msg");
    // Only a negated clause: it is what the query is about.
    assert!(
        search::keywords("不要合并转发")
            .terms
            .contains(&"合并".to_string())
    );
    // Nothing matches every term: the asking clause's terms pick the suggestions, so the
    // story's many words (机器人 群 发 message) do not crowd out the request.
    let found = search::keywords("刚才机器人在群里发错了一条，message_id 是 -12345，帮我撤回");
    assert!(found.results.is_empty());
    assert_eq!(names(&found.suggestions)[0], "delete_msg");
}

/// A query about someone else (他, someone) prefers the action that takes a user to the one
/// about the bot itself; a possessive noun phrase with no deed (我收藏的表情包) asks to see.
#[test]
fn who_and_what_the_query_is_about_lean_the_ranking() {
    assert_eq!(first_answer("他现在在线吗"), "nc_get_user_status");
    assert_eq!(first_answer("机器人在线吗"), "get_status");
    assert_eq!(first_answer("我收藏的表情包"), "fetch_custom_face");
    assert!(!ACTIONS[search::keywords("收藏表情").results[0].action].read_only);
}

/// An English question word asks when it opens a clause or follows a verb of finding out,
/// not when it joins a clause (`someone who wants to join`).
#[test]
fn a_question_word_inside_a_clause_does_not_ask() {
    assert_eq!(
        first_answer("reject the pending request from someone who wants to join our group"),
        "set_group_add_request"
    );
    assert_eq!(first_answer("who is muted"), "get_group_shut_list");
    assert_eq!(first_answer("find out who is muted"), "get_group_shut_list");
}

/// A question about a number is answered by the action whose result counts it; one about a
/// detail by the action whose result holds it, not the one that sets it.
#[test]
fn a_count_or_a_detail_is_answered_by_the_result_that_holds_it() {
    assert_eq!(
        first_answer("how many members does the group have"),
        "get_group_info"
    );
    assert_eq!(first_answer("他的群名片是什么"), "get_group_member_info");
    assert_eq!(first_answer("他的头衔是什么"), "get_group_member_info");
}

/// `who` with nobody named, or everyone to be seen, wants people found in a list.
#[test]
fn asking_who_or_for_everyone_wants_a_list_of_people() {
    assert_eq!(
        first_answer("who is in this group"),
        "get_group_member_list"
    );
    assert_eq!(first_answer("谁是这个群的管理员"), "get_group_member_list");
    assert_eq!(
        first_answer("show me everyone in the group"),
        "get_group_member_list"
    );
}

/// Undo words (取消, anymore, take … out of) put the action that undoes first.
#[test]
fn asking_to_undo_puts_the_undoing_action_first() {
    assert_eq!(
        first_answer("I don't want to like that album photo anymore"),
        "cancel_group_album_media_like"
    );
    assert_eq!(
        first_answer("Take that message out of the group's highlights"),
        "delete_essence_msg"
    );
}

/// A query that names both a group and a private chat fits the action that serves either.
#[test]
fn naming_both_chat_scopes_prefers_the_action_that_serves_either() {
    assert_eq!(
        first_answer("Mark message 4321 as read, whether it's a group or private chat"),
        "mark_msg_as_read"
    );
}

/// A request that is one of an action's keyword phrases, give or take filler and values,
/// is that action; a word with meaning (某人: someone) is not filler.
#[test]
fn a_request_that_is_a_keyword_phrase_finds_its_action() {
    assert_eq!(first_answer("rename the group"), "set_group_name");
    assert_eq!(
        first_answer("Rename group 123456 to \"Weekend Raid\"."),
        "set_group_name"
    );
    assert_eq!(first_answer("查某人 online status"), "nc_get_user_status");
}

/// A demonstrative with its noun (这个人) stays one stop word, a verb keeps its meaning
/// without its ending (清掉 is 清), and a question may end in its negation (能发语音不);
/// `how many people` counts members.
#[test]
fn chinese_words_are_cut_where_their_meaning_is() {
    let found = search::keywords("这个人发的消息");
    assert!(found.ignored_terms.contains(&"这个人".to_string()));
    assert_eq!(found.terms, ["发", "消息"]);
    let found = search::keywords("把这些消息清掉");
    assert_eq!(found.terms, ["消息", "清"]);
    assert!(found.ignored_terms.contains(&"掉".to_string()));
    assert_eq!(first_answer("能发语音不"), "can_send_record");
    assert_eq!(
        first_answer("how many people are in this group"),
        "get_group_info"
    );
}
