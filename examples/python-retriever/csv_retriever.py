#!/usr/bin/env python3
"""A kgmesh retriever written in Python: facts from a CSV file the graph does not hold.

It joins a running kgmesh cluster on NATS like any built-in role: it registers a NATS
service whose metadata says what it is (`kgmesh.role`, `kgmesh.kind`, `kgmesh.ops`) and
that it reads JSON (`kgmesh.codecs`), serves `retrieve` on the subject and queue group
kgmesh derives from its role name, and answers each request with evidence. The
coordinator calls it only when `bus.allowed_roles` names it (docs/agents.md).

The CSV holds `entity,relation,value` rows. For every question entity the coordinator
linked, the rows about that entity whose relation words the question uses become
evidence: a query result with one column, `n.<relation>`, which the summarizer reads
as that entity's property (as it reads `MATCH (n {name: X}) RETURN n.key`).

    pip install nats-py==2.9.0
    python3 csv_retriever.py --nats nats://127.0.0.1:4222 --csv facts.csv

Environment: NATS_USER / NATS_PASSWORD or NATS_TOKEN to log in; NATS_TLS_CA to verify
the server's certificate.
"""

import argparse
import asyncio
import csv
import json
import os
import re
import signal
import ssl
import time

import nats
from nats.micro import add_service

# The wire schema version this agent speaks (kgmesh_schemas::SCHEMA_VERSION): it is part
# of every subject and must match the `Kgmesh-Schema` header of each request.
SCHEMA_VERSION = 10
JSON = "application/json"


def words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def load_facts(path):
    facts = []
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            facts.append((row["entity"].strip(), row["relation"].strip(), row["value"].strip()))
    return facts


def cost(started):
    return {
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "graph_rows": 0,
        "bus_messages": 1,
        "elapsed_us": int((time.monotonic() - started) * 1e6),
        "llm_us": 0,
        "store_us": 0,
        "model_fallbacks": 0,
    }


class CsvRetriever:
    def __init__(self, role, facts):
        self.role = role
        self.facts = facts

    def evidence(self, body):
        asked = set(words(body["question"]))
        found = []
        for scored in body["entities"]:
            name = scored["entity"]["name"].lower()
            for entity, relation, value in self.facts:
                if entity.lower() != name:
                    continue
                relation_words = words(relation)
                if not relation_words or not set(relation_words) <= asked:
                    continue
                found.append({
                    "source": self.role,
                    "score": 1.0,
                    "item": {"Query": {
                        "cypher": f"csv: {entity} {relation}",
                        "rows": {
                            "columns": [f"n.{relation}"],
                            "rows": [[{"String": value}]],
                            "truncated": False,
                        },
                        "grounded": False,
                    }},
                })
        return found[: max(1, body["max_evidence"])]

    async def handle(self, request):
        started = time.monotonic()
        headers = request.headers or {}
        version = headers.get("Kgmesh-Schema", "")
        if version != str(SCHEMA_VERSION):
            await self.fail(request, "unsupported_version", {"UnsupportedVersion": {
                "got": version or "(none)", "supported": SCHEMA_VERSION}})
            return
        if headers.get("Content-Type", "") != JSON:
            await self.fail(request, "decode", {"Decode": {
                "detail": f"{self.role} reads {JSON} only"}})
            return
        try:
            body = json.loads(request.data)["body"]
            evidence = self.evidence(body)
        except (ValueError, KeyError, TypeError) as error:
            await self.fail(request, "bad_request", {"BadRequest": {"detail": str(error)}})
            return
        notes = [] if evidence else [f"{self.role}: no CSV fact about the question's entities"]
        reply = {
            "cost": cost(started),
            "result": {"Ok": {"evidence": evidence, "repair_hints": [], "notes": notes}},
        }
        await request.respond(json.dumps(reply).encode(), headers=self.headers())

    async def fail(self, request, kind, error):
        headers = self.headers()
        headers["Kgmesh-Error"] = kind
        reply = {"cost": cost(time.monotonic()), "result": {"Err": error}}
        await request.respond(json.dumps(reply).encode(), headers=headers)

    @staticmethod
    def headers():
        return {"Content-Type": JSON, "Kgmesh-Schema": str(SCHEMA_VERSION)}


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nats", default="nats://127.0.0.1:4222")
    parser.add_argument("--csv", required=True)
    parser.add_argument("--role", default="csv-retriever")
    args = parser.parse_args()

    options = {"name": f"kgmesh agent {args.role} (python)"}
    if os.environ.get("NATS_USER"):
        options["user"] = os.environ["NATS_USER"]
        options["password"] = os.environ.get("NATS_PASSWORD", "")
    if os.environ.get("NATS_TOKEN"):
        options["token"] = os.environ["NATS_TOKEN"]
    if os.environ.get("NATS_TLS_CA"):
        options["tls"] = ssl.create_default_context(cafile=os.environ["NATS_TLS_CA"])
    client = await nats.connect(args.nats, **options)

    retriever = CsvRetriever(args.role, load_facts(args.csv))
    service = await add_service(
        client,
        name=args.role,
        version="0.1.0",
        description="facts from a CSV file, for kgmesh",
        metadata={
            "kgmesh.role": args.role,
            "kgmesh.kind": "retriever",
            "kgmesh.ops": "retrieve",
            "kgmesh.codecs": "json",
        },
    )
    await service.add_endpoint(
        name="retrieve",
        subject=f"kgmesh.v{SCHEMA_VERSION}.{args.role}.retrieve",
        queue_group=f"kgmesh-{args.role}",
        handler=retriever.handle,
    )
    print(f"{args.role} serving {len(retriever.facts)} facts on {args.nats}", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await service.stop()
    await client.drain()


if __name__ == "__main__":
    asyncio.run(main())
