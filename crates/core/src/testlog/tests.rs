use super::*;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!("../../../../tests/fixtures/testlog/", $name))
    };
}

/// (passed, failed, skipped)
type Counts = (Option<u64>, Option<u64>, Option<u64>);

/// Parses `text` and checks everything but the summary, which the caller
/// checks when it wants to.
#[track_caller]
fn check(text: &str, framework: Framework, counts: Counts, failing: &[&str]) -> TestReport {
    let r = parse(text);
    assert_eq!(r.framework, Some(framework), "{r:?}");
    assert_eq!((r.passed, r.failed, r.skipped), counts, "{r:?}");
    assert_eq!(r.failing_tests, failing, "{r:?}");
    r
}

// ---- cargo test -------------------------------------------------------

const CARGO_ALL_FAILING: &[&str] = &[
    "tests::adds_wrong",
    "tests::nested::deep_panics",
    "api_fails",
];

#[test]
fn cargo_pass_sums_every_binary_and_the_doctests() {
    let r = check(
        fixture!("cargo-pass.txt"),
        Framework::Cargo,
        (Some(9), Some(0), Some(2)),
        &[],
    );
    assert_eq!(r.summary, "cargo test: 9 passed, 0 failed, 2 ignored");
}

#[test]
fn cargo_fail_fast_stops_after_the_lib_binary() {
    let r = check(
        fixture!("cargo-fail.txt"),
        Framework::Cargo,
        (Some(2), Some(2), Some(1)),
        &["tests::adds_wrong", "tests::nested::deep_panics"],
    );
    assert_eq!(r.summary, "cargo test: 2 passed, 2 failed, 1 ignored");
}

#[test]
fn cargo_no_fail_fast_several_binaries() {
    let r = check(
        fixture!("cargo-fail-no-fail-fast.txt"),
        Framework::Cargo,
        (Some(6), Some(3), Some(2)),
        CARGO_ALL_FAILING,
    );
    assert_eq!(r.summary, "cargo test: 6 passed, 3 failed, 2 ignored");
}

#[test]
fn cargo_quiet_and_colour() {
    for text in [
        fixture!("cargo-fail-quiet.txt"),
        fixture!("cargo-fail-color.txt"),
    ] {
        check(
            text,
            Framework::Cargo,
            (Some(6), Some(3), Some(2)),
            CARGO_ALL_FAILING,
        );
    }
}

#[test]
fn cargo_build_error_is_not_a_test_report() {
    assert_eq!(
        parse(fixture!("cargo-build-error.txt")),
        TestReport::default()
    );
}

#[test]
fn cargo_crashed_binary_counts_its_test_lines() {
    let text = "running 3 tests\ntest a ... ok\ntest b ... FAILED\n\
                error: test failed, to rerun pass `--lib`\n\nCaused by:\n  \
                process didn't exit successfully: (signal: 6, SIGABRT: process abort signal)\n";
    check(text, Framework::Cargo, (Some(1), Some(1), Some(0)), &["b"]);
}

// ---- cargo nextest ----------------------------------------------------

const NEXTEST_ALL_FAILING: &[&str] = &[
    "rsfail tests::adds_wrong",
    "rsfail tests::nested::deep_panics",
    "rsfail::api api_fails",
];

#[test]
fn nextest_pass() {
    let r = check(
        fixture!("nextest-pass.txt"),
        Framework::Nextest,
        (Some(8), Some(0), Some(2)),
        &[],
    );
    assert_eq!(r.summary, "cargo nextest: 8 passed, 0 failed, 2 skipped");
}

#[test]
fn nextest_wins_over_the_libtest_output_it_embeds() {
    for text in [
        fixture!("nextest-fail-no-fail-fast.txt"),
        fixture!("nextest-fail-color.txt"),
    ] {
        check(
            text,
            Framework::Nextest,
            (Some(5), Some(3), Some(2)),
            NEXTEST_ALL_FAILING,
        );
    }
}

#[test]
fn nextest_cancelled_run_says_what_did_not_run() {
    let r = check(
        fixture!("nextest-fail.txt"),
        Framework::Nextest,
        (Some(1), Some(2), Some(2)),
        &NEXTEST_ALL_FAILING[..2],
    );
    assert_eq!(
        r.summary,
        "cargo nextest: 1 passed, 2 failed, 2 skipped; 5 of 8 tests not run"
    );
}

#[test]
fn nextest_retries_timeouts_and_signals() {
    // Hand-written in nextest's format (status strings from its source):
    // a flaky test that passed on retry is not failing; a timeout and a
    // signal are.
    let text = "    Starting 4 tests across 1 binary\n\
        \x20 TRY 1 FAIL [   0.010s] (1/4) k tests::flaky\n\
        \x20 TRY 2 PASS [   0.010s] (1/4) k tests::flaky\n\
        \x20   SIGSEGV [   0.020s] (2/4) k tests::crash\n\
        \x20   TIMEOUT [  60.000s] (3/4) k tests::slow\n\
        \x20      PASS [   0.001s] (4/4) k tests::fine\n\
        ────────────\n\
        \x20    Summary [  60.100s] 4 tests run: 2 passed (1 flaky), 1 failed, 1 timed out, 0 skipped\n";
    check(
        text,
        Framework::Nextest,
        (Some(2), Some(2), Some(0)),
        &["k tests::crash", "k tests::slow"],
    );
}

// ---- pytest -----------------------------------------------------------

const PYTEST_FAILING: &[&str] = &[
    "tests/test_math.py::test_add_wrong",
    "tests/test_math.py::TestGroup::test_in_class_fails",
    "tests/test_math.py::test_param[2]",
    "tests/test_other.py::test_uses_broken",
];

#[test]
fn pytest_fail_every_format() {
    // 3 failed + 1 error; 5 passed; 1 skipped + 1 xfailed.
    for text in [
        fixture!("pytest-fail.txt"),
        fixture!("pytest-fail-verbose.txt"),
        fixture!("pytest-fail-quiet.txt"),
        fixture!("pytest-fail-color.txt"),
    ] {
        let r = check(
            text,
            Framework::Pytest,
            (Some(5), Some(4), Some(2)),
            PYTEST_FAILING,
        );
        assert_eq!(r.summary, "pytest: 5 passed, 4 failed, 2 skipped");
    }
}

#[test]
fn pytest_pass_every_format() {
    for text in [
        fixture!("pytest-pass.txt"),
        fixture!("pytest-pass-verbose.txt"),
        fixture!("pytest-pass-quiet.txt"),
    ] {
        let r = check(text, Framework::Pytest, (Some(2), Some(0), Some(1)), &[]);
        assert_eq!(r.summary, "pytest: 2 passed, 0 failed, 1 skipped");
    }
}

#[test]
fn pytest_ids_with_dashes_xdist_and_headers() {
    let text = "[gw1] [ 50%] FAILED tests/t.py::test_a[x - y]\n\
                FAILED tests/t.py::test_a[x - y] - assert 1 == 2\n\
                ERROR tests/test_bad.py - SyntaxError: invalid syntax\n\
                ==== 1 failed, 1 error, 2 passed, 1 warning in 65.32s (0:01:05) ====\n";
    check(
        text,
        Framework::Pytest,
        (Some(2), Some(2), Some(0)),
        &["tests/t.py::test_a[x - y]", "tests/test_bad.py"],
    );
    // -rN: no short summary, only the section headers.
    let text = "___________ test_b ___________\n\nE  assert 0\n\
                ====== 1 failed in 0.01s ======\n";
    check(
        text,
        Framework::Pytest,
        (Some(0), Some(1), Some(0)),
        &["test_b"],
    );
    let r = parse("no tests ran in 0.01s\n");
    assert_eq!(r.framework, Some(Framework::Pytest));
    assert_eq!(r.summary, "pytest: 0 passed, 0 failed");
}

// ---- go test ----------------------------------------------------------

const GO_FAILING: &[&str] = &["TestAddWrong", "TestTable", "TestTable/negative"];

#[test]
fn go_verbose_counts_tests_and_subtests() {
    let r = check(
        fixture!("go-fail-verbose.txt"),
        Framework::Go,
        (Some(4), Some(3), Some(1)),
        GO_FAILING,
    );
    assert_eq!(
        r.summary,
        "go test: 4 passed, 3 failed, 1 skipped; packages: 1 ok, 1 failed"
    );
    let r = check(
        fixture!("go-pass-verbose.txt"),
        Framework::Go,
        (Some(4), Some(0), Some(1)),
        &[],
    );
    assert_eq!(
        r.summary,
        "go test: 4 passed, 0 failed, 1 skipped; package: 1 ok"
    );
}

#[test]
fn go_without_v_knows_only_failures() {
    let r = check(
        fixture!("go-fail.txt"),
        Framework::Go,
        (None, Some(3), None),
        GO_FAILING,
    );
    assert_eq!(r.summary, "go test: 3 failed; packages: 1 ok, 1 failed");
    let r = check(
        fixture!("go-pass.txt"),
        Framework::Go,
        (None, Some(0), None),
        &[],
    );
    assert_eq!(r.summary, "go test: 0 failed; package: 1 ok");
}

#[test]
fn go_build_failure() {
    let r = check(
        fixture!("go-build-error.txt"),
        Framework::Go,
        (None, Some(3), None),
        GO_FAILING,
    );
    assert_eq!(
        r.summary,
        "go test: 3 failed; packages: 1 ok, 2 failed (1 did not build)"
    );
    // Only a package that did not build: how many tests fail is unknown.
    let text =
        "# example.com/x\nx.go:3:1: syntax error\nFAIL\texample.com/x [build failed]\nFAIL\n";
    let r = check(text, Framework::Go, (None, None, None), &[]);
    assert_eq!(
        r.summary,
        "go test: package: 0 ok, 1 failed (1 did not build)"
    );
}

// ---- jest -------------------------------------------------------------

const JEST_FAILING: &[&str] = &[
    "math › adds wrong",
    "math › nested › deep failure",
    "top level fails",
];

#[test]
fn jest_fail_every_format() {
    // 3 failed, 4 passed, 1 skipped + 1 todo.
    for text in [
        fixture!("jest-fail.txt"),
        fixture!("jest-fail-verbose.txt"),
        fixture!("jest-fail-color.txt"),
    ] {
        let r = check(
            text,
            Framework::Jest,
            (Some(4), Some(3), Some(2)),
            JEST_FAILING,
        );
        assert_eq!(r.summary, "jest: 4 passed, 3 failed, 2 skipped");
    }
    check(
        fixture!("jest-fail-single.txt"),
        Framework::Jest,
        (Some(2), Some(3), Some(2)),
        JEST_FAILING,
    );
}

#[test]
fn jest_pass() {
    for text in [fixture!("jest-pass.txt"), fixture!("jest-pass-verbose.txt")] {
        check(text, Framework::Jest, (Some(3), Some(0), Some(1)), &[]);
    }
}

#[test]
fn jest_suite_that_failed_to_run_is_named_by_its_file() {
    let r = check(
        fixture!("jest-suite-error.txt"),
        Framework::Jest,
        (Some(1), Some(0), Some(0)),
        &["jerr/broken.test.js"],
    );
    assert_eq!(r.summary, "jest: 1 passed, 0 failed; 1 test suite failed");
}

#[test]
fn jest_crosses_are_the_names_of_last_resort() {
    let text = "FAIL a.test.js\n  ✕ first (3 ms)\n  × second\n\
                Tests:       2 failed, 2 total\n";
    check(
        text,
        Framework::Jest,
        (Some(0), Some(2), Some(0)),
        &["first", "second"],
    );
}

// ---- vitest -----------------------------------------------------------

const VITEST_FAILING: &[&str] = &[
    "vfail/math.test.js > math > adds wrong",
    "vfail/math.test.js > math > nested > deep failure",
    "vfail/math.test.js > top level fails",
];

#[test]
fn vitest_fail_every_format() {
    for text in [
        fixture!("vitest-fail.txt"),
        fixture!("vitest-fail-verbose.txt"),
        fixture!("vitest-fail-color.txt"),
    ] {
        let r = check(
            text,
            Framework::Vitest,
            (Some(4), Some(3), Some(2)),
            VITEST_FAILING,
        );
        assert_eq!(r.summary, "vitest: 4 passed, 3 failed, 2 skipped");
    }
}

#[test]
fn vitest_pass_and_suite_error() {
    check(
        fixture!("vitest-pass.txt"),
        Framework::Vitest,
        (Some(3), Some(0), Some(1)),
        &[],
    );
    let r = check(
        fixture!("vitest-suite-error.txt"),
        Framework::Vitest,
        (Some(1), Some(0), Some(0)),
        &["verr/broken.test.js"],
    );
    assert_eq!(r.summary, "vitest: 1 passed, 0 failed; 1 test file failed");
}

#[test]
fn vitest_crosses_without_fail_headers() {
    let text = " ❯ a.test.ts (2 tests | 1 failed) 5ms\n   × breaks 3ms\n   ✓ works 1ms\n\
                \x20     Tests  1 failed | 1 passed (2)\n";
    check(
        text,
        Framework::Vitest,
        (Some(1), Some(1), Some(0)),
        &["breaks"],
    );
}

// ---- generic ----------------------------------------------------------

#[test]
fn generic_unittest() {
    let r = check(
        fixture!("generic-unittest-fail.txt"),
        Framework::Generic,
        (Some(1), Some(2), Some(1)),
        &["test_ut.MathTest.test_error", "test_ut.MathTest.test_wrong"],
    );
    assert_eq!(r.summary, "tests: 1 passed, 2 failed, 1 skipped");
    // Before Python 3.11 the parenthesis holds the class only.
    let text = "FAIL: test_x (pkg.mod.Case)\n---\nRan 3 tests in 0.1s\n\nFAILED (failures=1)\n";
    check(
        text,
        Framework::Generic,
        (Some(2), Some(1), Some(0)),
        &["pkg.mod.Case.test_x"],
    );
}

#[test]
fn generic_mocha_lines_merge() {
    check(
        fixture!("generic-mocha-fail.txt"),
        Framework::Generic,
        (Some(1), Some(1), Some(1)),
        &[],
    );
}

#[test]
fn generic_lines_in_any_order() {
    let cases: &[(&str, Counts)] = &[
        (
            "Summary: 12 passed, 3 failed, 1 skipped",
            (Some(12), Some(3), Some(1)),
        ),
        ("3 failed and 12 passed", (Some(12), Some(3), None)),
        ("7 failures", (None, Some(7), None)),
        (
            "10 examples, 2 failures, 1 pending",
            (Some(7), Some(2), Some(1)),
        ),
        (
            "Failed!  - Failed:     1, Passed:     2, Skipped:     0, Total:     3",
            (Some(2), Some(1), Some(0)),
        ),
        (
            " 2 pass\n 1 fail\n 3 expect() calls",
            (Some(2), Some(1), None),
        ),
    ];
    for (text, counts) in cases {
        let r = parse(text);
        assert_eq!(r.framework, Some(Framework::Generic), "{text}");
        assert_eq!((r.passed, r.failed, r.skipped), *counts, "{text}");
    }
    // The last summary wins.
    let r = parse("1 passed, 1 failed\nretrying\n5 passed, 0 failed\n");
    assert_eq!((r.passed, r.failed), (Some(5), Some(0)));
    assert_eq!(r.summary, "tests: 5 passed, 0 failed");
    // Versions and times are not counts.
    assert_eq!(parse("built v1.2 passed in 3ms").framework, None);
}

#[test]
fn finding_digits_eight_bytes_at_a_time_matches_a_plain_search() {
    // Every byte value, at every position and alignment.
    for value in 0..=255u8 {
        for len in 0..20 {
            for pos in 0..len {
                let mut b = vec![b'x'; len];
                b[pos] = value;
                let want = b.iter().position(u8::is_ascii_digit);
                assert_eq!(generic::find_digit(&b), want, "{value} at {pos} of {len}");
            }
        }
    }
    let mixed = b"\xff\x80/:09\x2f\x3a\xb0\xb9 a5";
    for start in 0..mixed.len() {
        let want = mixed[start..].iter().position(u8::is_ascii_digit);
        assert_eq!(generic::find_digit(&mixed[start..]), want);
    }
}

// ---- choosing ---------------------------------------------------------

#[test]
fn a_failing_tool_beats_a_passing_one() {
    let text = format!(
        "{}\n{}",
        fixture!("cargo-pass.txt"),
        fixture!("pytest-fail.txt")
    );
    check(
        &text,
        Framework::Pytest,
        (Some(5), Some(4), Some(2)),
        PYTEST_FAILING,
    );
    let text = format!(
        "{}\n{}",
        fixture!("pytest-pass.txt"),
        fixture!("cargo-pass.txt")
    );
    assert_eq!(parse(&text).framework, Some(Framework::Cargo));
}

#[test]
fn unknown_output_is_not_recognised() {
    for text in [
        "",
        "\n\n",
        "hello world\nall good\n",
        "error: could not find `Cargo.toml`",
    ] {
        let r = parse(text);
        assert_eq!(r, TestReport::default(), "{text:?}");
        assert!(r.summary.is_empty());
    }
}

#[test]
fn lossy_text_from_invalid_utf8() {
    let mut bytes = b"running 2 tests\ntest a ... ok\n".to_vec();
    bytes.extend_from_slice(b"\xff\xfe\xc3 garbage \xe2\x9c\n");
    bytes.extend_from_slice(b"test b\xff ... FAILED\n");
    bytes.extend_from_slice(b"test result: FAILED. 1 passed; 1 failed; 0 ignored;\n");
    let text = String::from_utf8_lossy(&bytes);
    check(
        &text,
        Framework::Cargo,
        (Some(1), Some(1), Some(0)),
        &["b\u{fffd}"],
    );
}

#[test]
fn huge_lines_are_read_and_names_clipped() {
    let long_name = "é".repeat(10_000);
    let text = format!(
        "{}\nrunning 1 test\ntest {long_name} ... FAILED\n{}\n\
         test result: FAILED. 0 passed; 1 failed; 0 ignored;\n",
        "x".repeat(5_000_000),
        "5 passed, ".repeat(100_000),
    );
    let r = parse(&text);
    assert_eq!(r.framework, Some(Framework::Cargo));
    assert_eq!(r.failed, Some(1));
    assert_eq!(r.failing_tests.len(), 1);
    assert!(r.failing_tests[0].len() <= MAX_NAME_BYTES);
    assert!(long_name.starts_with(&r.failing_tests[0]));
}

#[test]
fn failing_names_are_capped_and_deduplicated() {
    let mut text = String::from("running 150 tests\n");
    for i in 0..150 {
        text.push_str(&format!("test t{i} ... FAILED\n"));
    }
    text.push_str("failures:\n");
    for i in 0..150 {
        text.push_str(&format!("    t{i}\n"));
    }
    text.push_str("\ntest result: FAILED. 0 passed; 150 failed; 0 ignored;\n");
    let r = parse(&text);
    assert_eq!(r.failed, Some(150));
    assert_eq!(r.failing_tests.len(), MAX_FAILING);
    assert_eq!(r.failing_tests[0], "t0");
    assert_eq!(r.failing_tests[99], "t99");
}

#[test]
fn carriage_returns_keep_what_the_terminal_shows() {
    let text = "Tests:       1 passed, 1 total\r\nprogress 10%\rprogress 100%\r\
                Tests:       2 failed, 2 total\r\n";
    let r = parse(text);
    assert_eq!((r.passed, r.failed), (Some(1), Some(2)));
}

#[test]
fn ansi_escapes_are_stripped() {
    assert!(matches!(strip_ansi("plain"), Cow::Borrowed("plain")));
    assert_eq!(strip_ansi("\x1b[1m\x1b[31mred\x1b[0m text"), "red text");
    assert_eq!(strip_ansi("ok\x1b(B\x1b[m done"), "ok done");
    assert_eq!(
        strip_ansi("see \x1b]8;;https://x.test\x07link\x1b]8;;\x1b\\ here"),
        "see link here"
    );
    assert_eq!(strip_ansi("é\x1b[2K×\x1b"), "é×");
}

// ---- tail -------------------------------------------------------------

#[test]
fn tail_keeps_short_output_whole() {
    assert_eq!(tail("", 10), "");
    assert_eq!(tail("a\nb\n", 4), "a\nb\n");
}

#[test]
fn tail_cuts_at_a_line_start_with_a_marker() {
    let text = "first line\nsecond line\nthird\n";
    assert_eq!(tail(text, 10), "[... 23 bytes cut]\nthird\n");
    // A cut that lands on a line start keeps that line.
    assert_eq!(tail(text, 18), "[... 11 bytes cut]\nsecond line\nthird\n");
}

#[test]
fn tail_cuts_at_a_char_boundary_in_one_long_line() {
    // "ééé" is 6 bytes; the last 3 bytes start inside the second é.
    let r = tail("ééé", 3);
    assert_eq!(r, "[... 4 bytes cut]\né");
    let r = tail("xx\nyyyyé", 4);
    // No line start in the last 4 bytes: cut at a char boundary.
    assert_eq!(r, "[... 5 bytes cut]\nyyé");
    // A trailing newline alone does not count as a line start to cut at.
    assert_eq!(tail("abcdef\n", 3), "[... 4 bytes cut]\nef\n");
}

#[test]
fn report_serialises_in_snake_case() {
    let r = parse(fixture!("nextest-fail.txt"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["framework"], "nextest");
    assert_eq!(json["failed"], 2);
    let back: TestReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
}
