"""TLS contexts are built once per set of files and built again when a file changes."""

import os
import shutil
import ssl

import pytest

from offsets.kafka import tls
from offsets.kafka.files import FileRefused

SYSTEM_CAS = ssl.get_default_verify_paths().cafile


@pytest.fixture
def ca_file(tmp_path):
    if not SYSTEM_CAS or not os.path.exists(SYSTEM_CAS):
        pytest.skip("this machine has no system CA bundle to copy as a CA file")
    path = tmp_path / "ca.pem"
    shutil.copyfile(SYSTEM_CAS, path)
    return path


def test_the_same_files_give_the_same_context(ca_file):
    first = tls.context_for(str(ca_file))
    assert tls.context_for(str(ca_file)) is first
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname


def test_the_systems_cas_give_one_context_too():
    assert tls.context_for() is tls.context_for("", "", "")


def test_a_renewed_ca_file_gives_a_new_context(ca_file):
    first = tls.context_for(str(ca_file))
    text = ca_file.read_text()
    # The same certificates in a file of another size, as a renewed bundle would be.
    ca_file.write_text(text + "\n")
    renewed = tls.context_for(str(ca_file))
    assert renewed is not first
    assert tls.context_for(str(ca_file)) is renewed


def test_a_missing_file_fails_every_time_until_it_is_there(tmp_path, ca_file):
    later = tmp_path / "later.pem"
    for _ in range(2):
        with pytest.raises(FileRefused, match="cannot be read: No such file"):
            tls.context_for(str(later))
    shutil.copyfile(ca_file, later)
    assert isinstance(tls.context_for(str(later)), ssl.SSLContext)
