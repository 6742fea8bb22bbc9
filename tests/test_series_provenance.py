# SPDX-License-Identifier: GPL-2.0
"""Who wrote what in patches/: every patch under Mark Brown's name is his
posted patch (../shared/seeds: v19; ../shared/upstream/v23), with his
message and tags.  Its diff is the posted one line for line (context and
offsets may differ: the series is rebased onto 7.3.4), unless its message
declares the project's change in a "[shstk-lab: ...]" line; a declared
change is held to the fingerprint it was reviewed with, so that an edit to
any of them cannot go unnoticed.
"""
import email
import email.policy
import glob
import hashlib
import os
import re
import unittest

from tests.test_harness import TOP

SHARED = os.path.join(os.path.dirname(TOP), "shared")
POSTED = sorted(glob.glob(os.path.join(SHARED, "seeds", "*.patch")) +
                glob.glob(os.path.join(SHARED, "upstream", "v23", "*.mbox")))
AUTHOR = "Mark Brown <broonie@kernel.org>"
# The declared changes, by patch file: the sha256 (first 16 hex digits) of
# its added and removed lines as reviewed.  A new edit changes it: review
# the change, say it in the "[shstk-lab: ...]" line, then update this.
DECLARED = {
    "0003-selftests-Provide-helper-header-for-shadow-stack-tes.patch": "d51c4079b6fee161",
    "0010-selftests-clone3-Test-shadow-stack-support.patch": "3bc3289dc66afaf9",
}


def read_mail(path):
    """(From, subject without its [PATCH ...] prefix, message above the
    "---", the diff's added and removed lines) of a patch mail."""
    with open(path, "rb") as f:
        data = f.read()
    # An mbox's "From " line, and format-patch's, are no header.
    if data.startswith(b"From "):
        data = data.split(b"\n", 1)[1]
    msg = email.message_from_bytes(data, policy=email.policy.default)
    body = msg.get_content() if not msg.is_multipart() else msg.get_body().get_content()
    subject = re.sub(r"^\[[^]]*\]\s*", "", " ".join(str(msg["Subject"]).split()))
    text, _, rest = body.partition("\n---\n")
    diff = rest[rest.find("diff --git"):].split("\n-- \n")[0]
    changes = [line for line in diff.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))]
    return str(msg["From"]), subject, text, changes


def fingerprint(changes):
    return hashlib.sha256("\n".join(changes).encode()).hexdigest()[:16]


def tags(text):
    return [line for line in text.splitlines()
            if re.match(r"(Reviewed|Acked|Tested|Signed-off)-by: |Co-developed-by: ", line)]


def series():
    with open(os.path.join(TOP, "patches", "series")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


@unittest.skipUnless(POSTED, f"no posted mails in {SHARED} (../shared beside the clone)")
class ProvenanceTest(unittest.TestCase):
    def setUp(self):
        self.posted = {}
        for path in POSTED:
            _, subject, text, changes = read_mail(path)
            self.posted.setdefault(subject, []).append((os.path.relpath(path, SHARED), text, changes))

    def marks(self):
        for name in series():
            author, subject, text, changes = read_mail(os.path.join(TOP, "patches", name))
            if author == AUTHOR:
                yield name, subject, text, changes

    def test_every_patch_under_his_name_was_posted(self):
        for name, subject, _, _ in self.marks():
            with self.subTest(patch=name):
                self.assertIn(subject, self.posted, "no posted mail with this subject")

    def test_his_diffs_are_as_posted_or_the_change_is_declared(self):
        for name, subject, text, changes in self.marks():
            with self.subTest(patch=name):
                declared = "[shstk-lab:" in text
                if declared:
                    self.assertEqual(fingerprint(changes), DECLARED.get(name),
                                     "a declared change edited since its review")
                    continue
                self.assertNotIn(name, DECLARED, "declared here, but its message declares nothing")
                matches = [where for where, _, posted in self.posted.get(subject, [])
                           if posted == changes]
                self.assertTrue(matches, "its diff is not the posted one, and no change is declared")

    def test_his_tags_are_kept(self):
        for name, subject, text, _ in self.marks():
            with self.subTest(patch=name):
                kept = tags(text)
                versions = self.posted.get(subject, [])
                self.assertTrue(any(all(t in kept for t in tags(posted)) for _, posted, _ in versions),
                                f"tags lost: posted {[tags(p) for _, p, _ in versions]}, kept {kept}")

    def test_a_silent_edit_is_caught(self):
        # The check above fails for a diff that differs from every posting.
        name, subject, _, changes = next((n, s, t, c) for n, s, t, c in self.marks()
                                         if "[shstk-lab:" not in t)
        edited = changes[:-1] + [changes[-1] + " (edited)"]
        self.assertFalse([w for w, _, posted in self.posted[subject] if posted == edited], name)


if __name__ == "__main__":
    unittest.main()
