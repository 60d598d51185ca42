"""A scripted OpenAI-compatible judge on 127.0.0.1 for the judged-task tests.

``ScriptedJudge(rules)`` answers ``POST /v1/chat/completions`` with the reply of the first rule
``(needle, reply)`` whose needle occurs in the prompt (a reply that is a list is used in turn,
the last one repeating: a judge that first rambles and then answers), records every prompt, and
lists ``judge`` at ``GET /v1/models``. It stands in for the served judge model only; the client,
the prompts and the parsing under test are real.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedJudge:
    def __init__(self, rules: list[tuple[str, str | list[str]]]) -> None:
        self.rules = rules
        self.prompts: list[str] = []
        self._served: dict[int, int] = {}
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send({"data": [{"id": "judge"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                self._send({"choices": [{"message": {"role": "assistant",
                                                     "content": judge.reply(prompt)}}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        # a short poll: ``close`` (once per test) waits for the loop's next turn (0.5 s by default)
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        for i, (needle, reply) in enumerate(self.rules):
            if needle in prompt:
                if isinstance(reply, str):
                    return reply
                k = self._served.get(i, 0)
                self._served[i] = k + 1
                return reply[min(k, len(reply) - 1)]
        return "no rule matched"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
