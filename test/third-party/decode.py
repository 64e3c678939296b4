#!/usr/bin/env python3
"""A third-party reader of our topics: confluent-kafka-python with the schema registry.

Reads a topic from the beginning (fresh consumer group), decodes values with AvroDeserializer
(writer schema fetched from the registry by the id in the Confluent wire-format header), keeps
the records of one tenant and prints each as a JSON line:

    {"topic", "partition", "offset", "key", "schema_id", "value"}

Decimals are printed as strings (str(Decimal)), timestamps as ISO 8601 UTC with milliseconds
("2025-01-01T00:00:00.000Z"), bytes as hex. Exits 0 once --expect records were read, 1 when
the timeout passes first, 2 on a decoding error in one of the tenant's records.

Used by test/common/third-party-decode.int.test.ts; needs `pip install "confluent-kafka[avro,schemaregistry]"`.
"""
import argparse
import datetime
import decimal
import faulthandler
import json
import os
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def plain(v):
    """Decoded Avro values → JSON-able values."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def close(consumer, wait=10.0):
    """Closes the consumer, giving up after `wait` seconds: nothing was committed, so an unclean
    end loses nothing, and a broker busy with other tests must not keep this reader alive."""
    t = threading.Thread(target=consumer.close, daemon=True)
    t.start()
    t.join(wait)
    if t.is_alive():
        print(f"decode.py: consumer.close() still running after {wait}s; exiting without it", file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--registry", required=True, help="Confluent-compatible base URL (Apicurio: .../apis/ccompat/v7)")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--tenant", required=True, type=int)
    ap.add_argument("--expect", required=True, type=int)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds")
    ap.add_argument("--start", help="partition:offset,... to read from (assign); default: subscribe from the beginning")
    args = ap.parse_args()
    # Nothing below may hang the caller: past the timeout plus a margin every thread's stack goes
    # to stderr and the process exits, so a stuck call is named in the test's failure.
    faulthandler.dump_traceback_later(args.timeout + 30, exit=True)

    # The client's default is no HTTP timeout at all: a slow registry would block a read forever.
    registry = SchemaRegistryClient({"url": args.registry, "timeout": 10, "max.retries": 5})
    deserialize = AvroDeserializer(registry)
    consumer = Consumer(
        {
            "bootstrap.servers": args.brokers,
            "group.id": f"third-party-decode-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "socket.timeout.ms": 10000,
        }
    )
    if args.start:
        parts = [p.split(":") for p in args.start.split(",") if p]
        consumer.assign([TopicPartition(args.topic, int(p), int(o)) for p, o in parts])
    else:
        consumer.subscribe([args.topic])
    prefix = f"{args.tenant}:".encode()
    found = 0
    seen = 0
    deadline = time.monotonic() + args.timeout
    try:
        while found < args.expect and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(msg.error())
            seen += 1
            key = msg.key()
            # Other tenants' records (other test files' poison among them) are none of our business:
            # the key (tenant:customer) says whose a record is without decoding it.
            if key is None or not key.startswith(prefix):
                continue
            raw = msg.value()
            try:
                value = deserialize(raw, SerializationContext(msg.topic(), MessageField.VALUE))
            except Exception as e:  # noqa: BLE001 - report any decoding failure with the record
                print(
                    f"decode.py: cannot decode {msg.topic()}[{msg.partition()}]@{msg.offset()} key={key!r}: {type(e).__name__}: {e}",
                    file=sys.stderr,
                )
                return 2
            if value is None or value.get("tenant_id") != args.tenant:
                continue
            found += 1
            out = {
                "topic": msg.topic(),
                "partition": msg.partition(),
                "offset": msg.offset(),
                "key": key.decode("utf-8"),
                "schema_id": int.from_bytes(raw[1:5], "big") if raw and raw[0] == 0 else None,
                "value": plain(value),
            }
            print(json.dumps(out, sort_keys=True), flush=True)
    finally:
        closed = close(consumer)
    rc = 0
    if found < args.expect:
        print(
            f"decode.py: timed out after {args.timeout}s with {found}/{args.expect} records of tenant {args.tenant} ({seen} records read)",
            file=sys.stderr,
        )
        rc = 1
    if not closed:
        # Interpreter shutdown would wait on the client's threads: leave at once.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
