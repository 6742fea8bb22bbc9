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
# the change, say it in the "[shstk-lab: ...]" line, then update this.  A
# note that is not listed here (a rebase) leaves his lines as posted.
DECLARED = {
    "0003-selftests-Provide-helper-header-for-shadow-stack-tes.patch": "d51c4079b6fee161",
    "0010-selftests-clone3-Test-shadow-stack-support.patch": "3bc3289dc66afaf9",
}


# The patches with the subject of one of his postings that carry the
# project's name, and why.
NOT_HIS = {
    "0004-fork-Add-shadow-stack-support-to-clone3.patch":
        "rebuilt by the project from the series' description: v19's 4/8 was not among "
        "the mails it started from",
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


def his_text(text):
    """A message as Mark Brown wrote it: without what the project adds
    below his lines (its Signed-off-by, its "[shstk-lab: ...]" notes)."""
    lines = text.rstrip("\n").splitlines()
    while lines and (lines[-1].startswith("Signed-off-by: ") and AUTHOR not in lines[-1]
                     or lines[-1].startswith(("[shstk-lab:", " ")) or not lines[-1].strip()):
        lines.pop()
    return "\n".join(lines)


def problem(name, author, subject, text, changes, posted):
    """Why the patch @name is not Mark Brown's posting as it should be,
    or None; @posted: {subject: [(where, message, changes)]}."""
    if author != AUTHOR:
        return None
    versions = posted.get(subject)
    if not versions:
        return "no posted mail has its subject"
    if not any(his_text(text) == his_text(message) for _, message, _ in versions):
        return "its message is not his"
    if name in DECLARED:
        if "[shstk-lab:" not in text:
            return "listed as a declared change, but its message declares nothing"
        if fingerprint(changes) != DECLARED[name]:
            return "a declared change edited since its review"
        return None
    # A "[shstk-lab: ...]" note of a rebase alone: the lines are his.
    if not any(changes == posted_changes for _, _, posted_changes in versions):
        return "its diff is not the posted one, and no change is declared"
    return None


def series():
    """The patch files of patches/ and of the overlays for posted versions
    (patches/vN/: its own files, not "@N" or ../), relative to patches/."""
    names = []
    for listing in [os.path.join(TOP, "patches", "series")] + sorted(
            glob.glob(os.path.join(TOP, "patches", "v*", "series"))):
        folder = os.path.relpath(os.path.dirname(listing), os.path.join(TOP, "patches"))
        with open(listing) as f:
            entries = [line.split("#")[0].strip() for line in f]
        names += [os.path.normpath(os.path.join(folder, e)) for e in entries
                  if e and not e.startswith(("@", "../"))]
    return names


@unittest.skipUnless(POSTED, f"no posted mails in {SHARED} (../shared beside the clone)")
class ProvenanceTest(unittest.TestCase):
    def setUp(self):
        self.posted = {}
        for path in POSTED:
            _, subject, text, changes = read_mail(path)
            self.posted.setdefault(subject, []).append((os.path.relpath(path, SHARED), text, changes))

    def patches(self):
        for name in series():
            yield (name, *read_mail(os.path.join(TOP, "patches", name)))

    def test_every_patch_under_his_name_is_his_posting(self):
        checked = 0
        for name, author, subject, text, changes in self.patches():
            with self.subTest(patch=name):
                self.assertIsNone(problem(name, author, subject, text, changes, self.posted))
            checked += author == AUTHOR
        self.assertGreater(checked, 0, "no patch under his name: nothing was checked")

    def test_his_subjects_under_another_name_are_listed_with_why(self):
        for name, author, subject, _, _ in self.patches():
            if author != AUTHOR and subject in self.posted:
                with self.subTest(patch=name):
                    self.assertIn(name, NOT_HIS, f"his posting's subject, under {author}")

    def test_an_edit_under_his_name_is_caught(self):
        # Each kind of edit, made to a copy of every patch under his name.
        for name, author, subject, text, changes in self.patches():
            if author != AUTHOR:
                continue
            with self.subTest(patch=name):
                edited = changes[:-1] + [changes[-1] + " "]
                self.assertIsNotNone(problem(name, author, subject, text, edited, self.posted))
                reworded = text.replace("\n", " and more\n", 1)
                self.assertIsNotNone(problem(name, author, subject, reworded, changes, self.posted))
                untagged = "\n".join(line for line in text.splitlines()
                                      if not line.startswith("Reviewed-by: "))
                if untagged != text:
                    self.assertIsNotNone(problem(name, author, subject, untagged, changes,
                                                 self.posted))


if __name__ == "__main__":
    unittest.main()
