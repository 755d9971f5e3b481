use super::check_command;

#[test]
fn refuses_destructive_and_escalating_commands() {
    let refused = [
        ("rm -rf /", "recursive delete of /"),
        ("rm -fr /", "recursive delete of /"),
        ("rm -r -f /", "recursive delete of /"),
        ("rm --recursive --force /", "recursive delete of /"),
        ("rm -rf --no-preserve-root /", "rm --no-preserve-root"),
        ("rm -rf /*", "recursive delete of /*"),
        ("rm -rf ~", "recursive delete of ~"),
        ("rm -rf ~/", "recursive delete of ~/"),
        ("rm -rf $HOME", "recursive delete of $HOME"),
        ("rm -Rf -- /", "recursive delete of /"),
        ("cd /tmp && rm -rf /", "recursive delete of /"),
        ("/bin/rm -rf /", "recursive delete of /"),
        ("sudo ls", "privilege escalation (sudo)"),
        ("FOO=1 sudo -E make install", "privilege escalation (sudo)"),
        ("echo hi; su - root", "privilege escalation (su)"),
        ("ls | xargs sudo rm", "privilege escalation (sudo)"),
        ("env sudo id", "privilege escalation (sudo)"),
        ("echo $(sudo id)", "privilege escalation (sudo)"),
        ("shutdown -h now", "stops the machine (shutdown)"),
        ("reboot", "stops the machine (reboot)"),
        ("halt", "stops the machine (halt)"),
        ("systemctl reboot", "stops the machine (systemctl)"),
        ("mkfs.ext4 /dev/sdb1", "formats a filesystem (mkfs.ext4)"),
        ("mkfs -t ext4 /dev/sdb1", "formats a filesystem (mkfs)"),
        (
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "raw write to a device (dd of=/dev/sda)",
        ),
        ("echo x > /dev/sda", "write to a disk device (/dev/sda)"),
        (
            "cat img >> /dev/nvme0n1",
            "write to a disk device (/dev/nvme0n1)",
        ),
        ("echo x | tee /dev/sdb", "write to a disk device (/dev/sdb)"),
        (":(){ :|:& };:", "fork bomb"),
        ("bomb() { bomb | bomb & }; bomb", "fork bomb"),
        ("bash -c 'sudo id'", "privilege escalation (sudo)"),
        ("sh -c \"rm -rf /\"", "recursive delete of /"),
        ("timeout 5 sudo id", "privilege escalation (sudo)"),
        (
            "if ! command -v foo >/dev/null; then sudo apt-get install -y foo; fi",
            "privilege escalation (sudo)",
        ),
        ("if [ -d x ]; then rm -rf ~; fi", "recursive delete of ~"),
        (
            "for i in 1 2; do sudo true; done",
            "privilege escalation (sudo)",
        ),
        ("! sudo true", "privilege escalation (sudo)"),
        (
            "cd x && \\\n  sudo make install",
            "privilege escalation (sudo)",
        ),
        (
            "FOO=1 \\\n  sudo make install",
            "privilege escalation (sudo)",
        ),
        (
            "timeout 30s sudo apt-get update",
            "privilege escalation (sudo)",
        ),
        ("timeout -s KILL 10 sudo id", "privilege escalation (sudo)"),
        ("env -u FOO sudo id", "privilege escalation (sudo)"),
        ("exec -a foo sudo id", "privilege escalation (sudo)"),
        ("xargs -I {} sudo rm {}", "privilege escalation (sudo)"),
        ("rm -rf //", "recursive delete of //"),
        ("rm -rf /etc/", "recursive delete of /etc/"),
        ("rm -rf ~/*", "recursive delete of ~/*"),
        ("cp disk.img /dev/sdb", "write to a disk device (/dev/sdb)"),
    ];
    for (cmd, reason) in refused {
        assert_eq!(check_command(cmd).as_deref(), Some(reason), "{cmd}");
    }
}

#[test]
fn lets_look_alikes_through() {
    let allowed = [
        "echo \"sudo is a word\"",
        "grep reboot notes.txt",
        "grep -r 'rm -rf /' docs",
        "rm -rf ./build",
        "rm -rf build/ target",
        "rm -rf /tmp/hx-test",
        "rm -f /",
        "ls /dev/sda",
        "dd if=/dev/sda of=disk.img",
        "dd if=/dev/zero of=/dev/null count=1",
        "echo done > /dev/null",
        "cat notes.txt | grep shutdown",
        "git commit -m 'reboot the halt logic'",
        "echo mkfs",
        "man su",
        "python3 -c 'print(1)'",
        "echo ':(){ :|:& };:' is a fork bomb",
        "make 2>&1 | tee build.log",
        "echo ${HOME}",
        "cat > setup.sh <<'EOF'\n#!/bin/sh\nsudo apt-get install -y foo\nEOF",
        "git commit -m \"$(cat <<'EOF'\nsudo support removed\nEOF\n)\"",
        "command -v sudo >/dev/null && echo yes",
        "rm -rf \\\n  build dist",
        "cd build && rm -rf *",
        "rm -rf .",
        "rm -rf ./*",
        "cp /dev/sda disk.img",
        "rm -rf ~/project/build",
        "rm -rf /etc-backup-copy",
    ];
    for cmd in allowed {
        assert_eq!(check_command(cmd), None, "{cmd}");
    }
}
