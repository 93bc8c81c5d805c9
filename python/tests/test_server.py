"""Tests against a running server: DEEPLAKED_DSN names it (the Go test
test/pyclient starts one); without it they are skipped."""

import os

import pytest

import deeplaked

DSN = os.environ.get("DEEPLAKED_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="DEEPLAKED_DSN not set")


@pytest.fixture(scope="module")
def db():
    d = deeplaked.connect(DSN)
    yield d
    d.close()


def test_issue_schema(db):
    # The issue's table, BLOB included (an alias of bytea).
    db.execute("CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, "
               "embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)")
    db.execute("CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, "
               "embedding VECTOR(1536), image BLOB, label INT, metadata JSONB)")
    rows = db.execute("SELECT column_name, data_type FROM information_schema.columns "
                      "WHERE table_name = 'training_samples' ORDER BY ordinal_position")
    assert [r[0] for r in rows] == ["id", "text", "embedding", "image", "label", "metadata"]
    assert rows[3][1] == "bytea"
