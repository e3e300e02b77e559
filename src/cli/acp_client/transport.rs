//! The agent's command line as words, and its stdin and stdout as the
//! line transport the protocol runs on: one JSON-RPC message a line, a
//! line from the agent at most [`MAX_LINE`] bytes (it is untrusted: a
//! line that never ends must not fill cogni's memory).

use crate::process::ServicePipes;
use futures::{Sink, Stream};
use std::io;
use std::pin::Pin;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The longest message the agent may send: a file it writes travels in
/// one, and cogni's file tools edit files of up to 64 MiB.
pub const MAX_LINE: u64 = 80 * 1024 * 1024;

/// What the connection reads and writes.
pub type Transport = agent_client_protocol::Lines<
    Pin<Box<dyn Sink<String, Error = io::Error> + Send>>,
    Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>,
>;

/// `command` split into words as a shell splits them: at unquoted
/// blanks, with single quotes, double quotes (where `\` escapes `"`, `\`,
/// `$` and `` ` ``) and backslashes outside quotes; nothing is expanded.
pub fn words(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(unclosed(command, "'")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(unclosed(command, "\"")),
                        },
                        Some(c) => w.push(c),
                        None => return Err(unclosed(command, "\"")),
                    }
                }
            }
            '\\' => {
                let w = word.get_or_insert_with(String::new);
                if let Some(c) = chars.next() {
                    w.push(c);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        return Err("--acp: the command is empty".into());
    }
    Ok(words)
}

fn unclosed(command: &str, quote: &str) -> String {
    format!("--acp {command}: a {quote} quote is not closed")
}

/// The agent's pipes as the connection's line transport.
pub fn lines(pipes: ServicePipes) -> Transport {
    let ServicePipes { stdin, stdout } = pipes;
    let outgoing = futures::sink::unfold(stdin, |mut stdin, line: String| async move {
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok::<_, io::Error>(stdin)
    });
    let incoming = futures::stream::unfold(Some(BufReader::new(stdout)), |reader| async move {
        let mut reader = reader?;
        match read_line(&mut reader).await {
            Ok(Some(line)) => Some((Ok(line), Some(reader))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

/// The next line (without its line feed), `None` at the end; an error
/// for a line longer than [`MAX_LINE`] or one that is not UTF-8.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let read = (&mut *reader)
        .take(MAX_LINE + 1)
        .read_until(b'\n', &mut line)
        .await?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() as u64 > MAX_LINE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the agent sent a message longer than {} MiB",
                MAX_LINE / 1024 / 1024
            ),
        ));
    }
    String::from_utf8(line).map(Some).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the agent sent a line that is not UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell_without_expansions() {
        let cases: &[(&str, &[&str])] = &[
            ("cogni acp", &["cogni", "acp"]),
            ("  node  agent.js ", &["node", "agent.js"]),
            (
                "sh -c 'echo $HOME; exit 3'",
                &["sh", "-c", "echo $HOME; exit 3"],
            ),
            (r#"a "b \"c\" \n" d\ e"#, &["a", r#"b "c" \n"#, "d e"]),
            ("x''y \"\"", &["xy", ""]),
        ];
        for (line, want) in cases {
            assert_eq!(words(line).unwrap(), *want, "{line}");
        }
        assert!(words("a 'b").unwrap_err().contains("not closed"));
        assert!(words("a \"b").unwrap_err().contains("not closed"));
        assert!(words("   ").unwrap_err().contains("empty"));
    }

    #[tokio::test]
    async fn lines_are_read_within_the_limit() {
        let mut input: &[u8] = b"one\ntwo\nthree";
        let mut reader = tokio::io::BufReader::new(&mut input);
        assert_eq!(
            read_line(&mut reader).await.unwrap().as_deref(),
            Some("one")
        );
        assert_eq!(
            read_line(&mut reader).await.unwrap().as_deref(),
            Some("two")
        );
        assert_eq!(
            read_line(&mut reader).await.unwrap().as_deref(),
            Some("three")
        );
        assert_eq!(read_line(&mut reader).await.unwrap(), None);
        let mut bad: &[u8] = b"\xff\xfe\n";
        let mut reader = tokio::io::BufReader::new(&mut bad);
        assert!(read_line(&mut reader).await.is_err());
    }
}
