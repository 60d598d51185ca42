"""``vade build-variants`` against a stub OpenAI-compatible endpoint on 127.0.0.1.

Real: the command, its HTTP client, cache, parsing and parquet output. Stand-in: the LLM (a
``http.server`` answering canned replies), since no model can be served here.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_train_local import png_bytes

from vade.cli import main
from vade.data.variant_texts import MAX_STEPS, parse_steps

QUESTIONS = {0: "How many dots are there?", 1: "Which bar is tallest? A, B or C",
             2: "Is the left pan heavier?"}


def _write_train(path: Path) -> None:
    rows = [{"data_source": "llava_ov/geo", "prompt": [{"role": "user", "content": f"<image>{q}"}],
             "images": [{"bytes": png_bytes(), "path": None}], "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": str(i)},
             "extra_info": {"split": "train", "index": i, "uid": f"geo:{i}", "task": "geo",
                            "domain": "math", "answer_type": "number", "question": q}}
            for i, q in QUESTIONS.items()]
    pq.write_table(pa.Table.from_pylist(rows), path)


class _Stub(BaseHTTPRequestHandler):
    replies: dict[str, str] = {}
    prompts: list[str] = []

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        type(self).prompts.append(prompt)
        if prompt.startswith("Rephrase"):
            q = prompt.rsplit("Question: ", 1)[1]
            text = "__import__('os').system('touch HACKED')" if "pan" in q else f"Tell me: {q}"
        else:
            text = "Let me think.\n1. Look at the image.\n2) Count carefully.\n3: The answer.\n" \
                   "1. an unrelated second list"
            if "bar" in prompt:
                text = "No steps here, just the answer B."
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"choices": [{"message": {"content": text}}]}).encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def endpoint():
    _Stub.prompts = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_parse_steps_takes_one_numbered_list_from_one():
    assert parse_steps("intro\n1. a\n2) b\nStep 3: c\n5. skipped\n1. again") == ["a", "b", "c"]
    assert parse_steps("2. starts late\n3. no") == []
    assert len(parse_steps("\n".join(f"{i}. s" for i in range(1, 20)))) == MAX_STEPS


def test_build_variants_names_bad_rows_keeps_replies_and_resumes(endpoint, tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_train(tmp_path / "train.parquet")
    args = ["build-variants", "--data-dir", str(tmp_path), "--endpoint", endpoint,
            "--model", "judge", "--no-progress"]
    assert main(args) == 2  # row 1's steps reply has no numbered steps
    err = capsys.readouterr().err
    assert "row index=1 (uid geo:1)" in err and "no numbered step 1" in err
    assert not (tmp_path / "variants.parquet").exists()
    cache = (tmp_path / "variants.cache.jsonl").read_text().splitlines()
    assert len(cache) == 6 and len(_Stub.prompts) == 6  # every reply kept
    assert not (tmp_path / "HACKED").exists()  # a reply is text, never run

    # the user fixes row 1's reply by hand (or deletes it to ask again): nothing is asked twice
    fixed = []
    for line in cache:
        rec = json.loads(line)
        if rec["key"].startswith("geo:1|steps"):
            rec["reply"] = "1. Compare the bars.\n2. B is tallest."
        fixed.append(json.dumps(rec))
    (tmp_path / "variants.cache.jsonl").write_text("\n".join(fixed) + "\n{truncated")
    assert main(args) == 0
    assert len(_Stub.prompts) == 6
    out = pq.read_table(tmp_path / "variants.parquet").to_pylist()
    assert [r["index"] for r in out] == [0, 1, 2]
    assert out[0]["steps"] == ["Look at the image.", "Count carefully.", "The answer."]
    assert out[1]["steps"] == ["Compare the bars.", "B is tallest."]
    assert out[0]["rephrasing"] == "Tell me: How many dots are there?"
    assert out[2]["rephrasing"] == "__import__('os').system('touch HACKED')"
    assert "(0 replies asked, 6 reused from" in capsys.readouterr().out
