"""ARM test guests under qemu-system: a Debian 12 root file system made by
debootstrap from the machine's own Debian mirror, the distribution's kernel
package for the architecture, booted under software emulation with qemu's
user-mode network, and driven from this machine over ssh.

The guest is built once per architecture into a private cache directory
($LP_VM_CACHE, else $XDG_CACHE_HOME/layerprof/arm-vm, else
~/.cache/layerprof/arm-vm), outside the source tree; a change of the recipe
below builds it again. Every boot runs on a throw-away overlay of the image
(qemu's snapshot mode), so a test can never spoil the next boot.

Building needs root (debootstrap, and binfmt_misc for the foreign
architecture's package scripts, registered for the build and removed after
if it was not there before), Debian's debootstrap, qemu-user-static,
qemu-system-arm and e2fsprogs, and the package mirror."""

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import free_port  # noqa: E402

# what each guest is made of
ARCHES = {
    "aarch64": {
        "debarch": "arm64", "kernel": "linux-image-arm64", "qemu": "qemu-system-aarch64",
        "machine": ["-M", "virt", "-cpu", "cortex-a72"], "binfmt": "qemu-aarch64",
        "prefix": "aarch64-linux-gnu-", "triplet": "aarch64-linux-gnu", "cmake_arch": "aarch64",
    },
    "armhf": {
        "debarch": "armhf", "kernel": "linux-image-armmp-lpae", "qemu": "qemu-system-arm",
        "machine": ["-M", "virt,highmem=off", "-cpu", "cortex-a15"], "binfmt": "qemu-arm",
        "prefix": "arm-linux-gnueabihf-", "triplet": "arm-linux-gnueabihf", "cmake_arch": "arm",
    },
}
SUITE = "bookworm"
# the guest's packages: the kernel's start-up, the host's way in (sshd), the
# libraries the layerprof command uses, and their -dev packages, which make
# the root file system the sysroot the project is cross-built against
PACKAGES = ["initramfs-tools", "kmod", "openssh-server", "iproute2", "tini", "procps",
            "libelf-dev", "libdw-dev", "libjson-c-dev", "libtraceevent-dev", "libc6-dev"]
# loaded by the initramfs itself: the guest has no udev to load them
INITRAMFS_MODULES = ["virtio_pci", "virtio_mmio", "virtio_blk", "virtio_net", "ext4"]
IMAGE_SIZE = "3G"
MEMORY_MB = 1024
CPUS = 2
RECIPE_VERSION = 1  # of the root file system
CONFIG_VERSION = 1  # of what _configure writes into it
GUEST_USER_PORT = 7878  # where the guest's agent listens for the host
OPT = "/opt/layerprof"  # where the cross-built project is installed in the guest


class GuestError(Exception):
    """A guest that cannot be built or booted: the message says why."""


def log(msg):
    print("arm-vm: %s" % msg, flush=True)


def cache_root():
    base = os.environ.get("LP_VM_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "layerprof", "arm-vm")
    return base


def private_dir(path):
    """Makes path (and its parents) and checks that path itself is a real
    directory of ours that only we can write: the cache holds the guest's
    ssh key and an image that runs as root."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not os.path.isdir(path) or os.path.islink(path) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise GuestError("%s must be a directory of uid %d that no one else can write" % (path, os.geteuid()))
    return path


def rootfs_hash(arch):
    """The recipe of a root file system: a change builds it again."""
    h = hashlib.sha256()
    h.update(repr((RECIPE_VERSION, SUITE, ARCHES[arch], PACKAGES, INITRAMFS_MODULES)).encode())
    return h.hexdigest()[:16]


def recipe_hash(arch):
    """The recipe of an image: the root file system's, the guest's
    configuration and its start-up script; a change of the last two only
    configures the root file system again and writes a new image."""
    h = hashlib.sha256()
    h.update(repr((rootfs_hash(arch), CONFIG_VERSION, IMAGE_SIZE)).encode())
    with open(os.path.join(HERE, "guest-boot"), "rb") as f:
        h.update(f.read())
    return h.hexdigest()[:16]


def mirror():
    """The Debian mirror this machine's apt uses ($LP_VM_MIRROR overrides)."""
    m = os.environ.get("LP_VM_MIRROR")
    if m:
        return m
    paths = ["/etc/apt/sources.list"]
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        paths += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith((".list", ".sources"))]
    for p in paths:
        try:
            with open(p) as f:
                text = f.read()
        except OSError:
            continue
        if p.endswith(".sources"):
            # deb822 stanzas: the URIs of a "Types: deb" stanza for the suite
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict((m.group(1).lower(), m.group(2).strip())
                              for m in re.finditer(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
                if "deb" in fields.get("types", "").split() and SUITE in fields.get("suites", "").split() \
                        and fields.get("enabled", "yes") != "no":
                    return fields["uris"].split()[0]
        else:
            for line in text.splitlines():
                w = re.sub(r"\[[^\]]*\]", " ", line.split("#")[0]).split()  # without [options]
                if len(w) >= 3 and w[0] == "deb" and w[2] == SUITE:
                    return w[1]
    raise GuestError("no Debian mirror for %s in /etc/apt (set LP_VM_MIRROR)" % SUITE)


def need_tools(tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        raise GuestError("not installed: %s (Debian: debootstrap qemu-user-static qemu-system-arm "
                         "qemu-utils e2fsprogs openssh-client)" % " ".join(missing))


def run(cmd, logf, **kw):
    """Runs a build step, its output into the build log; a failure is a
    GuestError naming the step and the log's last lines."""
    logf.write("$ %s\n" % " ".join(cmd))
    logf.flush()
    r = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
    if r.returncode:
        logf.flush()
        with open(logf.name, errors="replace") as f:
            tail = f.readlines()[-25:]
        raise GuestError("'%s' failed (exit %d); the end of %s:\n%s" % (" ".join(cmd[:3]), r.returncode,
                                                                       logf.name, "".join(tail)))


class Binfmt:
    """binfmt_misc registration of the architecture's qemu-user for the
    build's chroot, undone afterwards when this made it."""

    def __init__(self, name):
        self.name = name
        self.made = False
        self.mounted = False

    def __enter__(self):
        d = "/proc/sys/fs/binfmt_misc"
        if not os.path.exists(os.path.join(d, "register")):
            r = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", d], stderr=subprocess.PIPE,
                               universal_newlines=True)
            if r.returncode:
                raise GuestError("cannot mount binfmt_misc: %s" % r.stderr.strip())
            self.mounted = True
        if not os.path.exists(os.path.join(d, self.name)):
            conf = "/usr/lib/binfmt.d/%s.conf" % self.name
            if not os.path.exists(conf):
                raise GuestError("%s is missing (Debian: qemu-user-static)" % conf)
            with open(conf) as f:
                line = f.read().strip()
            with open(os.path.join(d, "register"), "w") as f:
                f.write(line)
            self.made = True
        return self

    def __exit__(self, *exc):
        if self.made:
            with open("/proc/sys/fs/binfmt_misc/%s" % self.name, "w") as f:
                f.write("-1")
        if self.mounted:
            subprocess.run(["umount", "/proc/sys/fs/binfmt_misc"])


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class Image:
    """One architecture's guest image in the cache."""

    def __init__(self, arch):
        if arch not in ARCHES:
            raise GuestError("unknown architecture '%s' (aarch64 or armhf)" % arch)
        self.arch = arch
        self.a = ARCHES[arch]
        self.dir = os.path.join(cache_root(), arch)
        self.rootfs = os.path.join(self.dir, "rootfs")
        self.image = os.path.join(self.dir, "root.img")
        self.kernel = os.path.join(self.dir, "vmlinuz")
        self.initrd = os.path.join(self.dir, "initrd.img")
        self.key = os.path.join(self.dir, "id_ed25519")
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        self.stamp = os.path.join(self.dir, "ready")
        self.rootfs_stamp = os.path.join(self.dir, "rootfs.ready")

    @staticmethod
    def _stamped(path, value):
        try:
            with open(path) as f:
                return f.read().strip() == value
        except OSError:
            return False

    def ready(self):
        return self._stamped(self.stamp, recipe_hash(self.arch))

    def build(self, force=False):
        """Builds the image unless it is ready; returns the seconds it took
        (0 when it was ready)."""
        private_dir(os.path.dirname(self.dir))
        private_dir(self.dir)
        if self.ready() and not force:
            return 0
        if os.geteuid() != 0:
            raise GuestError("building the guest needs root (debootstrap, binfmt_misc)")
        need_tools(["debootstrap", "mke2fs", "ssh-keygen", "chroot", self.a["qemu"]])
        t0 = time.monotonic()
        if os.path.exists(self.stamp):
            os.unlink(self.stamp)
        buildlog = os.path.join(self.dir, "build.log")
        with open(buildlog, "w") as logf, Binfmt(self.a["binfmt"]):
            log("%s: building the guest (log: %s)" % (self.arch, buildlog))
            if force or not self._stamped(self.rootfs_stamp, rootfs_hash(self.arch)):
                if os.path.exists(self.rootfs_stamp):
                    os.unlink(self.rootfs_stamp)
                self._rootfs(logf)
                write(self.rootfs_stamp, rootfs_hash(self.arch) + "\n")
            self._configure(logf)
            self._make_image(logf)
        write(self.stamp, recipe_hash(self.arch) + "\n")
        took = time.monotonic() - t0
        log("%s: guest built in %.0f s" % (self.arch, took))
        return took

    def _rootfs(self, logf):
        tmp = self.rootfs + ".new"
        for d in (tmp, self.rootfs):
            if os.path.lexists(d):
                shutil.rmtree(d)
        url = mirror()
        log("%s: debootstrap %s from the machine's Debian mirror" % (self.arch, SUITE))
        debs = private_dir(os.path.join(self.dir, "debs"))  # kept for the next build
        run(["debootstrap", "--foreign", "--arch=" + self.a["debarch"], "--variant=minbase", "--cache-dir=" + debs,
             "--include=" + ",".join(PACKAGES + [self.a["kernel"]]), SUITE, tmp, url], logf)
        # before the kernel package makes the initramfs: only the modules
        # listed, loaded by the initramfs itself (the guest has no udev)
        os.makedirs(os.path.join(tmp, "etc/initramfs-tools/conf.d"), exist_ok=True)
        write(os.path.join(tmp, "etc/initramfs-tools/conf.d/layerprof"), "MODULES=list\nCOMPRESS=gzip\n")
        os.makedirs(os.path.join(tmp, "usr/share/initramfs-tools/modules.d"), exist_ok=True)
        write(os.path.join(tmp, "usr/share/initramfs-tools/modules.d/layerprof"),
              "".join(m + "\n" for m in INITRAMFS_MODULES))
        log("%s: debootstrap's second stage, under qemu-user" % self.arch)
        run(["chroot", tmp, "/debootstrap/debootstrap", "--second-stage"], logf)
        os.rename(tmp, self.rootfs)

    def _configure(self, logf):
        r = self.rootfs
        log("%s: configuring the guest" % self.arch)
        write(os.path.join(r, "etc/hostname"), "layerprof-guest\n")
        write(os.path.join(r, "etc/hosts"), "127.0.0.1 localhost\n127.0.1.1 layerprof-guest\n")
        boot = os.path.join(r, "usr/local/sbin/layerprof-guest-boot")
        shutil.copyfile(os.path.join(HERE, "guest-boot"), boot)
        os.chmod(boot, 0o755)
        # PID 1 is tini, which reaps orphaned processes as an init must
        write(os.path.join(r, "usr/local/sbin/layerprof-guest-init"),
              "#!/bin/sh\nexec /usr/bin/tini -- /usr/local/sbin/layerprof-guest-boot\n", 0o755)
        # the host's key is the only way in; the guest's own key is known
        for f in (self.key, self.key + ".pub"):
            if os.path.exists(f):
                os.unlink(f)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "layerprof-host", "-f", self.key], logf)
        sshdir = os.path.join(r, "root/.ssh")
        os.makedirs(sshdir, mode=0o700, exist_ok=True)
        shutil.copyfile(self.key + ".pub", os.path.join(sshdir, "authorized_keys"))
        os.chmod(os.path.join(sshdir, "authorized_keys"), 0o600)
        etc_ssh = os.path.join(r, "etc/ssh")
        for f in os.listdir(etc_ssh):
            if f.startswith("ssh_host_"):
                os.unlink(os.path.join(etc_ssh, f))
        hostkey = os.path.join(etc_ssh, "ssh_host_ed25519_key")
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "layerprof-guest", "-f", hostkey], logf)
        with open(hostkey + ".pub") as f:
            pub = f.read().split()
        write(self.known_hosts, "layerprof-guest-%s %s %s\n" % (self.arch, pub[0], pub[1]), 0o600)
        write(os.path.join(etc_ssh, "sshd_config.d/layerprof.conf"),
              "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
              "PasswordAuthentication no\nUseDNS no\nMaxStartups 64\nMaxSessions 64\n")
        run(["chroot", r, "apt-get", "clean"], logf)
        kernels = sorted(f for f in os.listdir(os.path.join(r, "boot")) if f.startswith("vmlinuz-"))
        if not kernels:
            raise GuestError("the kernel package installed no /boot/vmlinuz-*")
        version = kernels[-1][len("vmlinuz-"):]
        shutil.copyfile(os.path.join(r, "boot", "vmlinuz-" + version), self.kernel)
        shutil.copyfile(os.path.join(r, "boot", "initrd.img-" + version), self.initrd)
        write(os.path.join(self.dir, "kernel-version"), version + "\n")

    def _make_image(self, logf):
        log("%s: writing the disk image" % self.arch)
        tmp = self.image + ".new"
        if os.path.exists(tmp):
            os.unlink(tmp)
        run(["mke2fs", "-q", "-t", "ext4", "-L", "layerprof-root", "-d", self.rootfs, tmp, IMAGE_SIZE], logf)
        os.rename(tmp, self.image)


class Guest:
    """One running guest: boot() starts it, run()/put()/get() drive it
    over ssh, stop() ends it. The agent port of the guest is forwarded to
    self.agent_port on this machine's loopback."""

    def __init__(self, image, workdir):
        self.img = image
        self.arch = image.arch
        self.work = workdir
        self.console = os.path.join(workdir, "console-%s.log" % image.arch)
        self.proc = None
        self.ssh_port = None
        self.agent_port = None
        self.boot_seconds = None

    def boot(self, timeout=600):
        a = self.img.a
        need_tools([a["qemu"], "ssh"])
        self.ssh_port = free_port()
        self.agent_port = free_port()
        net = "user,id=n0,hostfwd=tcp:127.0.0.1:%d-:22,hostfwd=tcp:127.0.0.1:%d-:%d" % (
            self.ssh_port, self.agent_port, GUEST_USER_PORT)
        cmd = [a["qemu"]] + a["machine"] + [
            "-smp", str(CPUS), "-m", str(MEMORY_MB), "-display", "none", "-monitor", "none",
            "-serial", "file:" + self.console, "-no-reboot",
            "-kernel", self.img.kernel, "-initrd", self.img.initrd,
            "-append", "root=/dev/vda rw console=ttyAMA0 panic=-1 net.ifnames=0 init=/usr/local/sbin/layerprof-guest-init",
            "-drive", "file=%s,format=raw,if=none,id=d0,snapshot=on" % self.img.image,
            "-device", "virtio-blk-pci,drive=d0",
            "-netdev", net, "-device", "virtio-net-pci,netdev=n0,romfile="]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "qemu-%s.err" % self.arch), "w"),
                                     start_new_session=True)
        deadline = t0 + timeout
        while True:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.stop()
                try:
                    with open(os.path.join(self.work, "qemu-%s.err" % self.arch), errors="replace") as f:
                        said = f.read()[-2000:].strip()
                except OSError:
                    said = ""
                raise GuestError("the %s guest's qemu ended (exit %d) before the guest answered%s:\n%s" % (
                    self.arch, code, (", saying: " + said) if said else "", self.console_tail()))
            if time.monotonic() > deadline:
                self.stop()
                raise GuestError("the %s guest did not answer within %d s:\n%s" % (
                    self.arch, timeout, self.console_tail()))
            r = self.run("true", timeout=30, check=False, connect_timeout=5)
            if r.returncode == 0:
                break
            time.sleep(1)
        self.boot_seconds = time.monotonic() - t0
        return self.boot_seconds

    def console_tail(self, lines=60):
        try:
            with open(self.console, errors="replace") as f:
                tail = f.readlines()[-lines:]
        except OSError:
            return "(no console output)"
        return "---- the guest's console (last %d lines) ----\n%s----" % (lines, "".join(tail))

    def ssh_cmd(self, connect_timeout=20):
        return ["ssh", "-q", "-p", str(self.ssh_port), "-i", self.img.key,
                "-o", "HostKeyAlias=layerprof-guest-%s" % self.arch,
                "-o", "UserKnownHostsFile=%s" % self.img.known_hosts, "-o", "StrictHostKeyChecking=yes",
                "-o", "BatchMode=yes", "-o", "ConnectTimeout=%d" % connect_timeout,
                "-o", "ServerAliveInterval=15", "-o", "LogLevel=ERROR", "root@127.0.0.1"]

    def run(self, command, timeout=300, check=True, input=None, connect_timeout=20, binary=False):
        """Runs a shell command line in the guest; returns the completed
        process (stdout and stderr captured)."""
        try:
            r = subprocess.run(self.ssh_cmd(connect_timeout) + ["--", command], input=input,
                               stdin=None if input is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                               universal_newlines=not binary)
        except subprocess.TimeoutExpired as e:
            if check:
                raise GuestError("'%s' in the %s guest took over %d s" % (command[:200], self.arch, timeout))
            return subprocess.CompletedProcess(e.cmd, 124, e.stdout or "", e.stderr or "")
        if check and r.returncode:
            raise GuestError("'%s' in the %s guest failed (exit %d): %s" % (
                command[:200], self.arch, r.returncode, (r.stderr or "")[-2000:]))
        return r

    def put(self, src, dst):
        """Copies the directory src of this machine to dst in the guest
        (made if missing), through tar over ssh."""
        tar = subprocess.Popen(["tar", "-C", src, "-cf", "-", "."], stdout=subprocess.PIPE)
        r = subprocess.run(self.ssh_cmd() + ["--", "mkdir -p '%s' && tar -C '%s' -xf -" % (dst, dst)],
                           stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        tar.stdout.close()
        tar.wait()
        if r.returncode or tar.returncode:
            raise GuestError("copying %s into the guest failed: %s" % (src, r.stderr.decode(errors="replace")))

    def get(self, src, dst):
        """Copies the directory src of the guest to dst on this machine."""
        os.makedirs(dst, exist_ok=True)
        ssh = subprocess.Popen(self.ssh_cmd() + ["--", "tar -C '%s' -cf - ." % src], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        r = subprocess.run(["tar", "-C", dst, "-xf", "-"], stdin=ssh.stdout, stderr=subprocess.PIPE)
        ssh.stdout.close()
        err = ssh.stderr.read()
        ssh.wait()
        if r.returncode or ssh.returncode:
            raise GuestError("copying %s out of the guest failed: %s" % (src, err.decode(errors="replace")))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
        self.proc = None


def cross_build(image, build_dir, jobs=None):
    """Cross-builds the whole project (target side and the layerprof
    command) for the guest, against the guest's root file system as the
    sysroot, its output into build_dir/arm-vm-build.log. Returns build_dir."""
    a = image.a
    need_tools([a["prefix"] + "gcc", "cmake"])
    env = dict(os.environ,
               PKG_CONFIG_SYSROOT_DIR=image.rootfs,
               PKG_CONFIG_LIBDIR=":".join(os.path.join(image.rootfs, p) for p in (
                   "usr/lib/%s/pkgconfig" % a["triplet"], "usr/share/pkgconfig")))
    cfg = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
           "-DCMAKE_TOOLCHAIN_FILE=%s/cmake/cross.cmake" % ROOT, "-DLP_CROSS_PREFIX=" + a["prefix"],
           "-DLP_CROSS_ARCH=" + a["cmake_arch"], "-DLP_CROSS_SYSROOT=" + image.rootfs, "-DLP_HOST=ON",
           "-DLP_TESTS=OFF", "-DLP_WERROR=" + os.environ.get("LP_WERROR", "OFF")]
    os.makedirs(build_dir, exist_ok=True)
    with open(os.path.join(build_dir, "arm-vm-build.log"), "w") as logf:
        for cmd in (cfg, ["cmake", "--build", build_dir, "-j", str(jobs or os.cpu_count() or 2)]):
            run(cmd, logf, env=env)
    return build_dir


def install(guest, guest_build, stage):
    """Copies the cross-built project into OPT in the guest: bin/ and lib/,
    where an installed layerprof finds its runtime (../lib), with links in
    /usr/local/bin."""
    for d in ("bin", "lib"):
        os.makedirs(os.path.join(stage, d), exist_ok=True)
    shutil.copy2(os.path.join(guest_build, "host", "layerprof"), os.path.join(stage, "bin"))
    shutil.copy2(os.path.join(guest_build, "agent", "layerprofd"), os.path.join(stage, "bin"))
    # the call-timing suite, which the agent runs for `oscal run --connect`
    shutil.copy2(os.path.join(guest_build, "oscal", "layerprof-oscal"), os.path.join(stage, "bin"))
    for lib in ("liblayerprof.so", "liblayerprof-mem.so", "liblayerprof-sync.so"):
        shutil.copy2(os.path.join(guest_build, "runtime", lib), os.path.join(stage, "lib"))
    guest.put(stage, OPT)
    # on the PATH too (each finds its runtime from where it really is)
    guest.run("ln -sf %s/bin/layerprof %s/bin/layerprofd /usr/local/bin/" % (OPT, OPT))
