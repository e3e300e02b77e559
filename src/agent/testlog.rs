//! TEMPORARY stub until the testlog branch is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    Cargo,
    Nextest,
    Pytest,
    Go,
    Jest,
    Vitest,
    Generic,
}
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TestReport {
    pub framework: Option<Framework>,
    pub passed: Option<u64>,
    pub failed: Option<u64>,
    pub skipped: Option<u64>,
    pub failing_tests: Vec<String>,
    pub summary: String,
}
pub fn parse(output: &str) -> TestReport {
    let _ = output;
    TestReport::default()
}
pub fn tail(output: &str, max_bytes: usize) -> String {
    let mut i = output.len().saturating_sub(max_bytes);
    while !output.is_char_boundary(i) {
        i += 1;
    }
    output[i..].to_string()
}
