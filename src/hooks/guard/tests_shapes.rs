//! Expansions the line tells, wrappers that move or multiply a command, files that are not
//! folders, and paths above the workspace (issue 32, item 11).

use std::path::Path;

use super::{check_command, check_command_in};

fn refused(cases: &[(&str, &str)]) {
    for (cmd, reason) in cases {
        assert_eq!(check_command(cmd).as_deref(), Some(*reason), "{cmd}");
    }
}

fn allowed(cases: &[&str]) {
    for cmd in cases {
        assert_eq!(check_command(cmd), None, "{cmd}");
    }
}

#[test]
fn words_the_line_gives_values_are_expanded() {
    refused(&[
        (
            "for i in /; do rm -rf $i; done",
            "recursive delete of /: `rm -rf $i` can run as `rm -rf /`",
        ),
        (
            "for d in build ~; do rm -rf \"$d\"; done",
            "recursive delete of ~: `rm -rf $d` can run as `rm -rf ~`",
        ),
        (
            "for c in sudo; do $c id; done",
            "privilege escalation (sudo): `$c id` can run as `sudo id`",
        ),
        (
            "d=/etc; rm -rf $d",
            "recursive delete of /etc: `rm -rf $d` can run as `rm -rf /etc`",
        ),
        (
            "rm -rf {/,}",
            "recursive delete of /: `rm -rf {/,}` can run as `rm -rf /`",
        ),
        (
            "rm -rf /{etc,tmp}",
            "recursive delete of /etc: `rm -rf /{etc,tmp}` can run as `rm -rf /etc /tmp`",
        ),
        (
            "rm -rf $(echo /)",
            "recursive delete of /: `rm -rf $(…)` can run as `rm -rf /`",
        ),
        (
            "rm -rf `echo ~`",
            "recursive delete of ~: `rm -rf $(…)` can run as `rm -rf ~`",
        ),
        (
            "rm -rf ${HOME:-/}",
            "recursive delete of ${HOME}: `rm -rf ${HOME:-/}` can run as `rm -rf ${HOME}`",
        ),
        (
            "rm -rf ${X:-/}",
            "recursive delete of /: `rm -rf ${X:-/}` can run as `rm -rf /`",
        ),
        (
            "rm -rf ${X:+/usr}",
            "recursive delete of /usr: `rm -rf ${X:+/usr}` can run as `rm -rf /usr`",
        ),
        (
            "set -- rm -rf /; \"$@\"",
            "recursive delete of /: `$@` can run as `rm -rf /`",
        ),
        (
            "set -- / x; rm -rf \"$1\"",
            "recursive delete of /: `rm -rf $1` can run as `rm -rf /`",
        ),
        (
            "set -- x /; shift; rm -rf $1",
            "recursive delete of /: `rm -rf $1` can run as `rm -rf /`",
        ),
        (
            "for i in /; do sh -c \"rm -rf $i\"; done",
            "recursive delete of /: `sh -c rm -rf $i` can run as `sh -c rm -rf /`",
        ),
        (
            "for i in {/,}; do rm -rf \"$i\"/*; done",
            "recursive delete of //*: `rm -rf $i/*` can run as `rm -rf //*`",
        ),
        (
            "rm -rf \"${HOME:-/}\"/.*",
            "recursive delete of ${HOME}/.*: `rm -rf ${HOME:-/}/.*` can run as `rm -rf ${HOME}/.*`",
        ),
        (
            "for i in /; do find $i -delete; done",
            "recursive delete of / (find -delete): `find $i -delete` can run as `find / -delete`",
        ),
        (
            "set -- sudo id; exec \"$@\"",
            "privilege escalation (sudo): `exec $@` can run as `exec sudo id`",
        ),
        ("d=/; cd $d && rm -rf *", "recursive delete of * in /"),
        ("cd / && rm -rf $PWD", "recursive delete of $PWD"),
    ]);
    // A neighbour the line does not tell, or tells harmless values for.
    allowed(&[
        "for i in build dist; do rm -rf $i; done",
        "for f in *.o; do rm -f $f; done",
        "rm -rf build/ target/ $TMPDIR/x",
        "rm -rf \"$TMPDIR\"/hx-*",
        "rm -rf ${TMPDIR:-/tmp}/x",
        "rm -rf ${OUT:-build}",
        "rm -rf {build,dist}/",
        "rm -rf target/{debug,release}",
        "rm -rf $(mktemp -d)",
        "rm -rf $(echo build)",
        "set -- a b; rm -rf \"$@\"",
        "set -e; rm -rf build",
        "d=build; rm -rf $d",
        "find . -name '*.o' -exec rm {} +",
        "echo {/,}",
        "for i in /; do ls $i; done",
        "rm -rf ./${NAME}",
    ]);
}

#[test]
fn wrappers_that_move_or_multiply_a_command_are_unwrapped() {
    refused(&[
        ("env -C / rm -rf *", "recursive delete of * in /"),
        ("env --chdir=/ rm -rf *", "recursive delete of * in /"),
        ("env -C ~ rm -rf .", "recursive delete of . in ~"),
        ("env -C / sh -c 'rm -rf *'", "recursive delete of * in /"),
        ("parallel rm -rf ::: /", "recursive delete of /"),
        ("parallel rm -rf ::: build /", "recursive delete of /"),
        ("parallel -j4 'rm -rf {}' ::: ~", "recursive delete of ~"),
        (
            "parallel -j 4 rm -rf {} ::: /etc",
            "recursive delete of /etc",
        ),
        ("parallel ::: 'sudo id'", "privilege escalation (sudo)"),
        ("echo / | parallel rm -rf", "recursive delete of /"),
    ]);
    allowed(&[
        "env -C build rm -rf *",
        "env -C /tmp/x rm -rf *",
        "env FOO=1 rm -rf build",
        "parallel rm -rf ::: build dist",
        "parallel gzip ::: *.log",
        "parallel rm -rf :::: dirs.txt",
        "ls | parallel rm -rf",
    ]);
}

#[test]
fn truncating_or_shredding_a_system_or_home_file_is_refused() {
    refused(&[
        (
            "truncate -s0 ~/.bashrc",
            "truncate of ~/.bashrc, a file of the system or of a home folder",
        ),
        (
            "truncate --size=0 $HOME/.profile",
            "truncate of $HOME/.profile, a file of the system or of a home folder",
        ),
        (
            "truncate -s 0 /etc/passwd",
            "truncate of /etc/passwd, a file of the system or of a home folder",
        ),
        (
            "shred -u ~/.ssh/id_ed25519",
            "shred of ~/.ssh/id_ed25519, a file of the system or of a home folder",
        ),
        (
            "cd && truncate -s0 .bashrc",
            "truncate of .bashrc in ~, a file of the system or of a home folder",
        ),
        (
            "truncate -s0 /home/bob/.zshrc",
            "truncate of /home/bob/.zshrc, a file of the system or of a home folder",
        ),
    ]);
    allowed(&[
        "truncate -s0 build.log",
        "truncate -s 10M disk.img",
        "truncate -s0 /tmp/x.log",
        "truncate -s0 ~/project/out.log",
        "truncate -s0 /var/log/app.log",
        "shred -u secret.txt",
        "shred ~/project/key",
    ]);
}

#[test]
fn paths_above_the_workspace_resolve_from_where_it_is() {
    let ws = Some(Path::new("/home/bob/proj"));
    let refused = [
        ("rm -rf ~+/../../..", "recursive delete of ~+/../../.."),
        ("rm -rf ../../../..", "recursive delete of ../../../.."),
        ("rm -rf ..", "recursive delete of .."),
        ("cd ../.. && rm -rf *", "recursive delete of * in /home"),
        ("rm -rf $PWD/..", "recursive delete of $PWD/.."),
    ];
    for (cmd, reason) in refused {
        assert_eq!(check_command_in(cmd, ws).as_deref(), Some(reason), "{cmd}");
    }
    for cmd in [
        "rm -rf ../other",
        "rm -rf ~+/build",
        "cd .. && rm -rf proj-copy",
        "rm -rf build/ target/ $TMPDIR/x",
        "rm -rf .",
    ] {
        assert_eq!(check_command_in(cmd, ws), None, "{cmd}");
    }
    // Without a workspace, or where one is not plain and absolute, above it is unknown.
    assert_eq!(check_command("rm -rf ~+/../../.."), None);
    assert_eq!(
        check_command_in("rm -rf ..", Some(Path::new("rel/ws"))),
        None
    );
    // The next line knows nothing of the last one's workspace.
    assert_eq!(check_command("rm -rf ../../../.."), None);
}
