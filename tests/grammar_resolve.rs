//! `resolve` per adapter (R-GRM-RESOLVE): one primitive, one decision request or one final
//! outcome code for each intent on an observed page.

use jevgate::grammar::{
    parse_command, resolve, Adapter, CalcKey, DecisionRequest, HistoryDirection, Intent, Key,
    KeypadKey, Outcome, Primitive, Resolution, ScrollDirection,
};
use jevgate::observation::{Control, Navigation, Observation, ScrollPosition};

fn page(controls: Vec<Control>) -> Observation {
    Observation {
        generation: 1,
        url: "https://example.com/".into(),
        title: "Example".into(),
        navigation: Some(Navigation {
            can_go_back: true,
            can_go_forward: true,
        }),
        controls,
        ..Observation::default()
    }
}

fn search_box(r: &str) -> Control {
    let mut c = Control::field(r, "searchbox", "Search", Some(""));
    c.search_like = true;
    c
}

fn keypad() -> Vec<Control> {
    let mut v: Vec<Control> = (0..10)
        .map(|d| Control::new(&format!("k{d}"), "button", &d.to_string()))
        .collect();
    for (r, n) in [
        ("add", "Add"),
        ("sub", "Subtract"),
        ("mul", "Multiply"),
        ("div", "Divide"),
    ] {
        v.push(Control::new(r, "button", n));
    }
    v.push(Control::new("eq", "button", "Equals"));
    v.push(Control::new("ac", "button", "All Clear"));
    v
}

fn on_browser(cmd: &str, obs: &Observation) -> Resolution {
    resolve(&parse_command(cmd), obs, Adapter::Browser)
}

fn on_computer(cmd: &str, obs: &Observation) -> Resolution {
    resolve(&parse_command(cmd), obs, Adapter::Computer)
}

fn outcome(o: Outcome) -> Resolution {
    Resolution::Outcome(o)
}

fn decision(r: &Resolution) -> &DecisionRequest {
    match r {
        Resolution::Decide(d) => d,
        other => panic!("expected a decision, got {other:?}"),
    }
}

// ---------------------------------------------------------------- browser

#[test]
fn r_grm_resolve_browser_new_tab_and_window_are_out_of_scope() {
    let obs = page(vec![]);
    for cmd in [
        "เปิด tab ใหม่",
        "new tab",
        "เปิดแท็บ Google ใหม่",
        "เปิดแท็กใหม่",
        "Cmd+T",
        "Cmd+N",
    ] {
        assert_eq!(
            on_browser(cmd, &obs),
            outcome(Outcome::NewTabOutOfScope),
            "{cmd}"
        );
    }
}

#[test]
fn r_grm_resolve_browser_history_without_an_entry_is_unavailable() {
    let mut obs = page(vec![]);
    obs.navigation = Some(Navigation {
        can_go_back: false,
        can_go_forward: true,
    });
    assert_eq!(
        on_browser("ย้อนกลับ", &obs),
        outcome(Outcome::HistoryUnavailable)
    );
    assert_eq!(
        on_browser("forward", &obs),
        Resolution::Act(Primitive::History {
            direction: HistoryDirection::Forward
        })
    );
}

#[test]
fn r_grm_resolve_browser_without_navigation_keys_are_unsupported_and_history_is_decided() {
    let mut obs = page(vec![Control::new("e1", "link", "Home")]);
    obs.navigation = None;
    assert_eq!(on_browser("enter", &obs), outcome(Outcome::KeyUnsupported));
    assert_eq!(decision(&on_browser("back", &obs)).options, vec!["e1"]);
    let search = on_browser("ค้นหา แมว", &obs);
    assert_eq!(decision(&search).text_offer.as_deref(), Some("แมว"));
}

#[test]
fn r_grm_resolve_browser_scroll_at_the_limit_sends_nothing() {
    let mut obs = page(vec![]);
    obs.scroll = ScrollPosition {
        at_top: true,
        at_bottom: false,
    };
    assert_eq!(on_browser("เลื่อนขึ้น", &obs), outcome(Outcome::ScrollLimit));
    assert_eq!(
        on_browser("scroll ลง", &obs),
        Resolution::Act(Primitive::Scroll {
            direction: ScrollDirection::Down
        })
    );
    obs.scroll.at_bottom = true;
    assert_eq!(on_browser("page down", &obs), outcome(Outcome::ScrollLimit));
}

#[test]
fn r_grm_resolve_browser_keys_press_natively_with_their_count() {
    let obs = page(vec![]);
    assert_eq!(
        on_browser("backspace x3", &obs),
        Resolution::Act(Primitive::Keypress {
            key: Key::Backspace,
            count: 3
        })
    );
    assert_eq!(
        on_browser("ลูกศรลง", &obs),
        Resolution::Act(Primitive::Keypress {
            key: Key::ArrowDown,
            count: 1
        })
    );
}

#[test]
fn r_grm_resolve_browser_search_types_and_submits_into_the_only_search_field() {
    let obs = page(vec![
        Control::new("e1", "link", "Home"),
        search_box("e2"),
        Control::field("e3", "textbox", "Email", Some("")),
    ]);
    assert_eq!(
        on_browser("ค้นหา แมว", &obs),
        Resolution::Act(Primitive::Type {
            target: "e2".into(),
            text: "แมว".into(),
            submit: true
        })
    );
}

#[test]
fn r_grm_resolve_browser_search_with_several_fields_asks_which_field() {
    let obs = page(vec![
        Control::field("e1", "textbox", "From", Some("")),
        Control::field("e2", "textbox", "To", Some("")),
        Control::new("e3", "button", "Go"),
    ]);
    let r = on_browser("search cats", &obs);
    let d = decision(&r);
    assert!(d.choose_field && d.submit);
    assert_eq!(d.options, vec!["e1", "e2"]);
    assert_eq!(d.text_offer.as_deref(), Some("cats"));

    let two_search = page(vec![search_box("s1"), search_box("s2")]);
    assert_eq!(
        decision(&on_browser("search cats", &two_search)).options,
        vec!["s1", "s2"]
    );
}

#[test]
fn r_grm_resolve_browser_type_offers_the_text_verbatim_and_never_submits() {
    let obs = page(vec![Control::field("e1", "textbox", "Name", Some(""))]);
    let r = on_browser("พิมพ์ สวัสดีครับ", &obs);
    let d = decision(&r);
    assert_eq!(d.text_offer.as_deref(), Some("สวัสดีครับ"));
    assert!(d.choose_field && !d.submit);
}

#[test]
fn r_grm_resolve_sensitive_fields_are_never_offered_for_text() {
    let mut pw = Control::field("p", "textbox", "Password", None);
    pw.sensitive = true;
    let obs = page(vec![pw, Control::field("u", "textbox", "User", Some(""))]);
    assert_eq!(
        decision(&on_browser("type hunter2", &obs)).options,
        vec!["u"]
    );
}

#[test]
fn r_grm_resolve_browser_navigate_opens_in_the_bound_tab() {
    let obs = page(vec![]);
    assert_eq!(
        on_browser("เข้า google", &obs),
        Resolution::Act(Primitive::Navigate {
            url: "https://google.com".into()
        })
    );
}

#[test]
fn r_grm_resolve_a_hand_built_unsafe_navigate_is_unresolved() {
    let obs = page(vec![]);
    let bad = Intent::Navigate {
        url: "javascript:alert(1)".into(),
    };
    for adapter in [Adapter::Browser, Adapter::Computer] {
        assert_eq!(
            resolve(&bad, &obs, adapter),
            outcome(Outcome::NavigationUnresolved)
        );
    }
}

#[test]
fn r_grm_resolve_browser_decide_offers_every_control_and_the_quoted_text() {
    let obs = page(vec![
        Control::new("e1", "link", "First"),
        Control::new("e2", "link", "Second"),
    ]);
    let r = on_browser("เข้า link แรก", &obs);
    assert_eq!(decision(&r).options, vec!["e1", "e2"]);
    let r = on_browser("ใส่ \"hello\" ในช่องค้นหา", &obs);
    assert_eq!(decision(&r).text_offer.as_deref(), Some("hello"));
}

#[test]
fn r_grm_resolve_browser_erase_presses_backspace_in_a_focused_field_only() {
    let mut obs = page(vec![Control::field("e1", "textbox", "Name", Some("abc"))]);
    assert!(matches!(on_browser("ลบ", &obs), Resolution::Decide(_)));
    obs.focus = Some("e1".into());
    assert_eq!(
        on_browser("ลบๆ", &obs),
        Resolution::Act(Primitive::Keypress {
            key: Key::Backspace,
            count: 2
        })
    );
    obs.controls[0].value = Some(String::new());
    assert_eq!(on_browser("ลบ", &obs), outcome(Outcome::NothingToErase));
}

#[test]
fn r_grm_resolve_browser_calculator_words_are_decided() {
    let obs = page(keypad());
    assert!(matches!(on_browser("ห้า", &obs), Resolution::Decide(_)));
    assert!(matches!(on_browser("บวก", &obs), Resolution::Decide(_)));
}

// ---------------------------------------------------------------- computer

#[test]
fn r_grm_resolve_computer_digits_need_a_keypad_and_press_digit_by_digit() {
    let obs = page(keypad());
    for cmd in ["ห้า ศูนย์", "ห้าสิบ", "50", "๕๐"] {
        assert_eq!(
            on_computer(cmd, &obs),
            Resolution::Act(Primitive::PressKeys {
                keys: vec![KeypadKey::Digit('5'), KeypadKey::Digit('0')]
            }),
            "{cmd}"
        );
    }
    assert_eq!(jevgate::grammar::keypad_button(&obs, '5'), Some("k5"));
    // No keypad (a digit missing): decided.
    let mut no_nine = keypad();
    no_nine.retain(|c| c.name != "9");
    assert!(matches!(
        on_computer("5", &page(no_nine)),
        Resolution::Decide(_)
    ));
    // A digit shown twice is not a keypad.
    let mut twice = keypad();
    twice.push(Control::new("x5", "button", "5"));
    assert!(matches!(
        on_computer("5", &page(twice)),
        Resolution::Decide(_)
    ));
}

// Issue 25, seed 003 "Numbers and calculator keys": a keypad sequence presses key by key when
// every key has its one button up front; two matches or none send the whole command to the
// decision before anything is pressed; while a text field has focus the words are text; a bare
// ลบ is Subtract only while no Delete control could be meant.
#[test]
fn r_grm_resolve_computer_keypad_sequences_are_decided_up_front() {
    let d = KeypadKey::Digit;
    let k = KeypadKey::Key;
    let obs = page(keypad());
    assert_eq!(
        on_computer("ห้า บวก เจ็ด เท่ากับ", &obs),
        Resolution::Act(Primitive::PressKeys {
            keys: vec![d('5'), k(CalcKey::Add), d('7'), k(CalcKey::Equals)]
        })
    );
    assert_eq!(
        on_computer("แปด ลบ สาม", &obs),
        Resolution::Act(Primitive::PressKeys {
            keys: vec![d('8'), k(CalcKey::Subtract), d('3')]
        })
    );
    assert_eq!(
        jevgate::grammar::keypad_key(&obs, k(CalcKey::Equals)),
        Some("eq")
    );
    // No Equals button, or two Add buttons: the whole command is decided, nothing pressed.
    let mut no_equals = keypad();
    no_equals.retain(|c| c.name != "Equals");
    let mut two_adds = keypad();
    two_adds.push(Control::new("plus", "button", "+"));
    for v in [no_equals, two_adds] {
        let r = on_computer("ห้า บวก เจ็ด เท่ากับ", &page(v));
        assert!(!decision(&r).offer_command_text, "{r:?}");
    }
    // A Delete control could be meant by ลบ (not by minus).
    let mut with_delete = keypad();
    with_delete.push(Control::new("del", "button", "Delete"));
    let with_delete = page(with_delete);
    assert!(matches!(
        on_computer("แปด ลบ สาม", &with_delete),
        Resolution::Decide(_)
    ));
    assert!(matches!(
        on_computer("8 minus 3", &with_delete),
        Resolution::Act(Primitive::PressKeys { .. })
    ));
    // No keypad: decided.
    let mut no_nine = keypad();
    no_nine.retain(|c| c.name != "9");
    assert!(matches!(
        on_computer("5 + 7", &page(no_nine)),
        Resolution::Decide(_)
    ));
    // A text field has focus: the words are text.
    let mut typing = keypad();
    typing.push(Control::field("f", "text", "Note", Some("")));
    let mut typing = page(typing);
    typing.focus = Some("f".into());
    assert!(decision(&on_computer("ห้า บวก เจ็ด", &typing)).offer_command_text);
    // A browser never presses keypad sequences.
    assert!(matches!(
        on_browser("ห้า บวก เจ็ด", &obs),
        Resolution::Decide(_)
    ));
}

#[test]
fn r_grm_resolve_computer_menu_items_are_not_keypad_buttons() {
    let mut v = keypad();
    v.push(Control::new("m", "menuitem", "Add"));
    let obs = page(v);
    assert_eq!(
        on_computer("บวก", &obs),
        Resolution::Act(Primitive::Press {
            target: "add".into()
        })
    );
}

#[test]
fn r_grm_resolve_computer_calculator_keys_press_the_one_labelled_button() {
    let obs = page(keypad());
    for (cmd, target) in [
        ("บวก", "add"),
        ("times", "mul"),
        ("หาร", "div"),
        ("=", "eq"),
        ("เคลียร์", "ac"),
        ("minus", "sub"),
    ] {
        assert_eq!(
            on_computer(cmd, &obs),
            Resolution::Act(Primitive::Press {
                target: target.into()
            }),
            "{cmd}"
        );
    }
    // Elsewhere, words such as clear or add go to the decision.
    let form = page(vec![Control::new("c", "button", "Clear")]);
    assert!(matches!(on_computer("clear", &form), Resolution::Decide(_)));
    assert_eq!(
        resolve(
            &Intent::CalcKey { key: CalcKey::Add },
            &form,
            Adapter::Computer
        ),
        Resolution::Decide(DecisionRequest {
            options: vec!["c".into()],
            ..DecisionRequest::default()
        })
    );
}

#[test]
fn r_grm_resolve_computer_words_are_text_while_a_text_field_has_focus() {
    let mut v = keypad();
    v.push(Control::field("f", "textfield", "Note", Some("hi")));
    let mut obs = page(v);
    obs.focus = Some("f".into());
    for cmd in ["ห้า", "บวก", "starwork"] {
        let r = on_computer(cmd, &obs);
        assert!(decision(&r).offer_command_text, "{cmd}");
    }
}

#[test]
fn r_grm_resolve_computer_erase_rewrites_the_focused_field() {
    let mut obs = page(vec![Control::field(
        "f",
        "textfield",
        "Note",
        Some("สวัสดีครับ"),
    )]);
    obs.focus = Some("f".into());
    assert_eq!(
        on_computer("ลบๆๆ", &obs),
        Resolution::Act(Primitive::Erase {
            target: "f".into(),
            count: 3,
            value: "สวัสดีค".into()
        })
    );
    assert_eq!(
        on_computer("delete 100", &obs),
        Resolution::Act(Primitive::Erase {
            target: "f".into(),
            count: 50,
            value: String::new()
        })
    );
    assert_eq!(
        on_computer("backspace x2", &obs),
        Resolution::Act(Primitive::Erase {
            target: "f".into(),
            count: 2,
            value: "สวัสดีคร".into()
        })
    );
}

#[test]
fn r_grm_resolve_computer_erase_refuses_unknown_or_empty_values() {
    let mut obs = page(vec![Control::field("f", "textfield", "Note", None)]);
    obs.focus = Some("f".into());
    assert_eq!(on_computer("ลบ", &obs), outcome(Outcome::EraseUnavailable));
    obs.controls[0].value = Some(String::new());
    assert_eq!(on_computer("ลบ", &obs), outcome(Outcome::NothingToErase));
    obs.controls[0].sensitive = true;
    obs.controls[0].value = None;
    assert_eq!(
        on_computer("delete 2", &obs),
        outcome(Outcome::EraseUnavailable)
    );
}

#[test]
fn r_grm_resolve_computer_focus_on_static_text_finds_the_one_field_holding_it() {
    let mut obs = page(vec![
        Control::field("f1", "textfield", "To", Some("hello")),
        Control::field("f2", "textfield", "Subject", Some("other")),
        Control {
            editable: false,
            actions: vec![],
            ..Control::new("t", "AXStaticText", "hello")
        },
    ]);
    obs.focus = Some("t".into());
    assert_eq!(
        on_computer("ลบ", &obs),
        Resolution::Act(Primitive::Erase {
            target: "f1".into(),
            count: 1,
            value: "hell".into()
        })
    );
    obs.controls[1].value = Some("hello".into());
    assert_eq!(on_computer("ลบ", &obs), outcome(Outcome::EraseUnavailable));
}

#[test]
fn r_grm_resolve_computer_lob_presses_subtract_only_when_no_delete_control_could_be_meant() {
    let obs = page(keypad());
    assert_eq!(
        on_computer("ลบ", &obs),
        Resolution::Act(Primitive::Press {
            target: "sub".into()
        })
    );
    let mut with_delete = keypad();
    with_delete.push(Control::new("del", "button", "Delete"));
    assert!(matches!(
        on_computer("ลบ", &page(with_delete)),
        Resolution::Decide(_)
    ));
    // "delete" never means Subtract, and ลบๆ is an erase only.
    assert!(matches!(on_computer("delete", &obs), Resolution::Decide(_)));
    assert!(matches!(on_computer("ลบๆ", &obs), Resolution::Decide(_)));
}

#[test]
fn r_grm_resolve_computer_browser_shortcuts_press_the_menu_command_or_decide() {
    let obs = page(vec![
        Control::new("m1", "menuitem", "New Tab"),
        Control::new("m2", "menuitem", "New Window"),
        Control::new("m3", "menuitem", "Close Tab"),
        Control::new("m4", "menuitem", "Quit Google Chrome"),
    ]);
    for (cmd, target) in [
        ("Cmd+T", "m1"),
        ("new window", "m2"),
        ("ปิดแท็บ", "m3"),
        ("Cmd+Q", "m4"),
    ] {
        assert_eq!(
            on_computer(cmd, &obs),
            Resolution::Act(Primitive::Press {
                target: target.into()
            }),
            "{cmd}"
        );
    }
    assert!(matches!(
        on_computer("เปิด tab ใหม่", &page(vec![])),
        Resolution::Decide(_)
    ));
}

#[test]
fn r_grm_resolve_computer_navigate_types_into_the_one_address_bar() {
    let obs = page(vec![
        Control::field("bar", "AXTextField", "Address and search bar", Some("")),
        Control::new("b", "button", "Reload"),
    ]);
    assert_eq!(
        on_computer("www.google.com", &obs),
        Resolution::Act(Primitive::Type {
            target: "bar".into(),
            text: "https://www.google.com".into(),
            submit: true
        })
    );
    let two = page(vec![
        Control::field("a", "AXTextField", "Address", Some("")),
        Control::field("b", "AXComboBox", "Search", Some("")),
    ]);
    let r = on_computer("เข้า google", &two);
    assert_eq!(decision(&r).options, vec!["a", "b"]);
    // Issue 25: Chromium's address bar through AT-SPI is role `entry` (found by role, whatever
    // its name in the system's language).
    let chromium = page(vec![
        Control::field("e46", "entry", "แถบที่อยู่และค้นหา", Some("")),
        Control::new("e31", "push button", "Reload"),
    ]);
    assert_eq!(
        on_computer("go to http://127.0.0.1:8080/p/third", &chromium),
        Resolution::Act(Primitive::Type {
            target: "e46".into(),
            text: "http://127.0.0.1:8080/p/third".into(),
            submit: true
        })
    );
    assert!(matches!(
        on_computer("go to example.com", &page(vec![])),
        Resolution::Decide(_)
    ));
}

#[test]
fn r_grm_resolve_computer_scroll_keys_and_history_skip_the_decision() {
    let mut obs = page(vec![]);
    obs.scroll.at_bottom = true;
    assert_eq!(
        on_computer("scroll down", &obs),
        Resolution::Act(Primitive::Scroll {
            direction: ScrollDirection::Down
        })
    );
    assert_eq!(
        on_computer("esc", &obs),
        Resolution::Act(Primitive::Keypress {
            key: Key::Escape,
            count: 1
        })
    );
    assert_eq!(
        on_computer("back", &obs),
        Resolution::Act(Primitive::History {
            direction: HistoryDirection::Back
        })
    );
}

#[test]
fn r_grm_resolve_outcome_codes_are_the_seed_spellings() {
    let all = [
        (Outcome::NewTabOutOfScope, "NEW_TAB_OUT_OF_SCOPE"),
        (Outcome::HistoryUnavailable, "HISTORY_UNAVAILABLE"),
        (Outcome::ScrollLimit, "SCROLL_LIMIT"),
        (Outcome::KeyUnsupported, "KEY_UNSUPPORTED"),
        (Outcome::NothingToErase, "NOTHING_TO_ERASE"),
        (Outcome::EraseUnavailable, "ERASE_UNAVAILABLE"),
        (Outcome::NavigationUnresolved, "NAVIGATION_UNRESOLVED"),
    ];
    for (o, code) in all {
        assert_eq!(o.code(), code);
        assert_eq!(serde_json::to_value(o).unwrap(), serde_json::json!(code));
    }
}
