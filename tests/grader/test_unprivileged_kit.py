"""tests/unprivileged.py: the kit runs as an ordinary user, from its own copy, and that user
cannot read what only root may."""

import json

import pytest

from tests.support.unprivileged import SKIP_REASON, UnprivilegedKit

pytestmark = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")

PROBE = """
import json, os, sys
import keras, numpy
import grader.kit, grader.cli
try:
    open(sys.argv[1]).read()
    secret = "read"
except PermissionError:
    secret = "PermissionError"
print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
                  "groups": os.getgroups(), "kit": str(grader.kit.KIT), "secret": secret,
                  "keras": keras.__file__, "numpy": numpy.__file__}))
"""


@pytest.fixture(scope="module")
def kit():
    built = UnprivilegedKit()
    print(f"unprivileged kit built in {built.seconds:.1f} s at {built.base}")
    yield built
    built.cleanup()
    assert not built.base.exists()


def test_the_user_runs_the_kit_copy_and_cannot_read_roots_files(kit):
    secret = kit.base / "root-only.txt"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    done = kit.run(["-c", PROBE, str(secret)], cwd=kit.home, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    print(seen)
    assert seen["uid"] == seen["euid"] == kit.uid != 0
    assert seen["gid"] == kit.gid and seen["groups"] in ([], [kit.gid])
    assert seen["kit"] == str(kit.kit)
    assert seen["secret"] == "PermissionError"
    # The packages come from the hard-linked copy, never from the original venv.
    assert seen["keras"].startswith(str(kit.base)) and seen["numpy"].startswith(str(kit.base))
