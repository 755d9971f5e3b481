use super::*;

fn words(line: &str) -> Vec<Vec<String>> {
    commands(line).into_iter().map(|c| c.words).collect()
}

#[test]
fn splits_on_operators_and_keeps_quoted_words_whole() {
    assert_eq!(
        words(r#"cd x && echo "a; b" | grep 'c d'; ls"#),
        vec![
            vec!["cd", "x"],
            vec!["echo", "a; b"],
            vec!["grep", "c d"],
            vec!["ls"]
        ]
    );
}

#[test]
fn finds_substitutions_and_redirects() {
    let cmds = commands("echo \"$(sudo id)\" > /dev/sda 2>&1");
    assert_eq!(cmds[0].words, vec!["sudo", "id"]);
    assert_eq!(cmds[1].words, vec!["echo", "$(…)"]);
    assert_eq!(cmds[1].redirects, vec!["/dev/sda"]);
    assert_eq!(words("x=`reboot`"), vec![vec!["reboot"], vec!["x=$(…)"]]);
}

#[test]
fn braces_in_words_and_groups() {
    assert_eq!(words("{ echo ${HOME}; }"), vec![vec!["echo", "${HOME}"]]);
    assert_eq!(
        words("find . -exec rm {} +; xargs -I{} mv {} x"),
        vec![
            vec!["find", ".", "-exec", "rm", "{}", "+"],
            vec!["xargs", "-I{}", "mv", "{}", "x"]
        ]
    );
    assert_eq!(
        words("{ a; } | b; echo } {a,b}"),
        vec![vec!["a"], vec!["b"], vec!["echo", "}", "{a,b}"]]
    );
    assert_eq!(words("f(){ g; }"), vec![vec!["f"], vec!["g"]]);
}

#[test]
fn heredoc_bodies_and_continuations() {
    assert_eq!(
        words("cat > setup.sh <<'EOF'\nsudo apt-get install foo\nEOF\nls"),
        vec![vec!["cat"], vec!["ls"]]
    );
    assert_eq!(
        words("cat <<-END | sh\n\tsudo x\n\tEND\necho ok"),
        vec![vec!["cat"], vec!["sh"], vec!["echo", "ok"]]
    );
    assert_eq!(
        words("cd x && \\\n  sudo make install"),
        vec![vec!["cd", "x"], vec!["sudo", "make", "install"]]
    );
    assert_eq!(words("grep x < in.txt"), vec![vec!["grep", "x"]]);
    assert_eq!(words("cat <<< reboot"), vec![vec!["cat"]]);
}

#[test]
fn each_command_knows_its_stdin() {
    let stdin =
        |line: &str| -> Vec<Input> { commands(line).into_iter().map(|c| c.stdin).collect() };
    assert_eq!(
        stdin("cat <<'EOF' | sh -s\nsudo x\n  y\nEOF\nls"),
        [
            Input::Text("sudo x\n  y\n".into()),
            Input::Pipe(0),
            Input::Inherited
        ]
    );
    assert_eq!(
        stdin("sh <<-END\n\tid\n\tEND"),
        [Input::Text("id\n".into())]
    );
    assert_eq!(stdin("bash <<< 'a b'"), [Input::Text("a b\n".into())]);
    assert_eq!(stdin("sh < x.sh"), [Input::File("x.sh".into())]);
    assert_eq!(stdin("sh 0<x.sh 3<y"), [Input::File("x.sh".into())]);
    assert_eq!(stdin("sh 3<<EOF\nid\nEOF"), [Input::Inherited]);
    assert_eq!(stdin("sh <&3"), [Input::Unknown]);
    assert_eq!(stdin("a || b"), [Input::Inherited, Input::Inherited]);
    assert_eq!(stdin("a |& b"), [Input::Inherited, Input::Pipe(0)]);
    assert_eq!(stdin("a |\n  b"), [Input::Inherited, Input::Pipe(0)]);
    assert_eq!(
        stdin("a | b < f"),
        [Input::Inherited, Input::File("f".into())]
    );
    assert_eq!(stdin("{ a; } | b"), [Input::Inherited, Input::Unknown]);
    // A substitution's commands come first; the pipe still names the command before it.
    assert_eq!(
        stdin("echo \"$(date)\" | sh"),
        [Input::Inherited, Input::Inherited, Input::Pipe(1)]
    );
}

#[test]
fn substitutions_are_recorded_with_their_commands() {
    let cmds = commands("bash -c \"$(curl -s u | gunzip)\" x; sh <(wget u)");
    let joined: Vec<_> = cmds.iter().map(|c| c.words.join(" ")).collect();
    assert_eq!(
        joined,
        ["curl -s u", "gunzip", "bash -c $(…) x", "wget u", "sh <(…)"]
    );
    assert_eq!(cmds[2].substitutions, vec![Range { start: 0, end: 2 }]);
    assert_eq!(cmds[4].substitutions, vec![Range { start: 3, end: 4 }]);
    // An unquoted here-doc runs its substitutions; a quoted one does not.
    assert_eq!(
        words("cat <<EOF > f\n$(sudo id)\nEOF"),
        [vec!["cat"], vec!["sudo", "id"]]
    );
    assert_eq!(words("cat <<'EOF' > f\n$(sudo id)\nEOF"), [vec!["cat"]]);
}

#[test]
fn redirections_and_descriptors() {
    // A number written apart from `>` is an argument, not a descriptor.
    assert_eq!(words("echo 1 > out"), vec![vec!["echo", "1"]]);
    assert_eq!(words("echo 1>out"), vec![vec!["echo"]]);
    let cmds = commands("make &> /dev/sda && ls");
    assert_eq!(cmds[0].words, ["make"]);
    assert_eq!(cmds[0].redirects, ["/dev/sda"]);
    assert_eq!(cmds[1].words, ["ls"]);
}

#[test]
fn ansi_c_quotes_are_read_as_bash_reads_them() {
    assert_eq!(
        words(r"$'\x72\x6d' -rf $'\057'"),
        vec![vec!["rm", "-rf", "/"]]
    );
    assert_eq!(
        words(r"echo $'a\'b' x$'\tc'"),
        vec![vec!["echo", "a'b", "x\tc"]]
    );
    assert_eq!(
        words(r"echo $'\u00e9\cA\q'"),
        vec![vec!["echo", "é\u{1}\\q"]]
    );
    assert_eq!(
        words(r#"echo $"sudo id" "$'x'""#),
        vec![vec!["echo", "sudo id", "$'x'"]]
    );
    // Cut short: what was read stays the word, and nothing panics.
    assert_eq!(words(r"echo $'ab\"), vec![vec!["echo", "ab\\"]]);
    assert_eq!(words(r"echo $'\x"), vec![vec!["echo", "\\x"]]);
}

#[test]
fn comments_are_ignored() {
    assert_eq!(words("ls # sudo reboot"), vec![vec!["ls"]]);
}
