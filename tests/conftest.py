"""Suite-wide settings: derived caches of read-only stores go to a folder of this session."""

from __future__ import annotations

import os
import tempfile

# Set at import, before any test or server subprocess starts, so nothing a test runs
# writes into the user's real ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="rageval-test-cache-")
