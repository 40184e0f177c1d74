"""confluent-kafka (librdkafka) against a Kafka listener, for test/kafka/confluent-kafka.spec.ts.

Each command prints one JSON object on stdout and exits 0, or prints the error on stderr and
exits 1. Every wait is bounded by --timeout seconds.

With SPOOL_KAFKA_CLIENT_PROPERTIES naming a client.properties file (what `spool dev --secure`
writes), every client takes librdkafka's security settings from it: security.protocol,
sasl.mechanism, sasl.username, sasl.password and the ssl.*.location files; the Java-only keys
(sasl.jaas.config, ssl.truststore.*, ssl.keystore.*) are left out, as librdkafka refuses them.

  create-topic BOOTSTRAP TOPIC PARTITIONS REPLICATION
      AdminClient.create_topics, then list_topics: {"partitions": N}
  produce BOOTSTRAP TOPIC FROM TO
      an idempotent producer (acks=all) sends key-<n>/value-<n> with headers origin=python and
      index=<n> for n in [FROM, TO): {"delivered": [{"key", "partition", "offset"}, ...]}
  consume BOOTSTRAP TOPIC GROUP COUNT
      a group member (auto commit off, earliest when the group has no offset) reads COUNT
      records, commits them synchronously and leaves:
      {"records": [{"key", "value", "headers", "partition", "offset", "timestamp"}, ...]}
  produce-paced BOOTSTRAP TOPIC COUNT RECORDS_PER_SECOND
      an idempotent producer (acks=all, retries left to librdkafka) sends values 0..COUNT-1 to
      partition 0 at about RECORDS_PER_SECOND, printing "progress N" on stderr every 100 records
      handed over and "acknowledged N" every 100 acknowledged, then flushes:
      {"delivered": N, "lastOffset": offset, "errors": [...]}
  rebalance BOOTSTRAP TOPIC GROUP PARTITIONS
      one member joins and is assigned every partition; a second joins and the group splits them;
      the second leaves and the first has them all again: {"alone": N, "split": [N1, N2],
      "afterLeave": N}, the assigned partition counts at each step
"""

import json
import os
import sys
import time

import confluent_kafka
import confluent_kafka.admin
from confluent_kafka import KafkaException
from confluent_kafka.admin import NewTopic

TIMEOUT_SECONDS = 30

LIBRDKAFKA_SECURITY_KEYS = {
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
}


def security_settings():
    """librdkafka's keys of the client.properties SPOOL_KAFKA_CLIENT_PROPERTIES names, if any."""
    location = os.environ.get("SPOOL_KAFKA_CLIENT_PROPERTIES")
    if not location:
        return {}
    settings = {}
    with open(location, encoding="utf-8") as properties:
        for line in properties:
            line = line.strip()
            if line == "" or line.startswith("#") or "=" not in line:
                continue
            key, value = line.split("=", 1)
            if key in LIBRDKAFKA_SECURITY_KEYS:
                settings[key] = value
    return settings


def secured(client_class):
    """The client class, each instance created with the security settings added."""
    return lambda config, **options: client_class({**config, **security_settings()}, **options)


Consumer = secured(confluent_kafka.Consumer)
Producer = secured(confluent_kafka.Producer)
AdminClient = secured(confluent_kafka.admin.AdminClient)


def create_topic(bootstrap, topic, partitions, replication):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=int(partitions), replication_factor=int(replication))],
        request_timeout=TIMEOUT_SECONDS,
    )
    futures[topic].result(timeout=TIMEOUT_SECONDS)
    metadata = admin.list_topics(topic=topic, timeout=TIMEOUT_SECONDS)
    listed = metadata.topics[topic]
    if listed.error is not None:
        raise KafkaException(listed.error)
    return {"partitions": len(listed.partitions)}


def produce(bootstrap, topic, first, end):
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    )
    delivered = []
    errors = []

    def on_delivery(error, message):
        if error is not None:
            errors.append(str(error))
        else:
            delivered.append(
                {
                    "key": message.key().decode(),
                    "partition": message.partition(),
                    "offset": message.offset(),
                }
            )

    for index in range(int(first), int(end)):
        producer.produce(
            topic,
            key=f"key-{index}",
            value=f"value-{index}",
            headers=[("origin", b"python"), ("index", str(index).encode())],
            on_delivery=on_delivery,
        )
    remaining = producer.flush(TIMEOUT_SECONDS)
    if remaining != 0 or errors:
        raise RuntimeError(f"{remaining} records undelivered, errors: {errors}")
    return {"delivered": delivered}


def produce_paced(bootstrap, topic, count, records_per_second):
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # A leader election takes seconds; librdkafka retries within this.
            "message.timeout.ms": TIMEOUT_SECONDS * 1000,
        }
    )
    delivered = []
    errors = []

    def on_delivery(error, message):
        if error is not None:
            errors.append(str(error))
        else:
            delivered.append(message.offset())
            if len(delivered) % 100 == 0:
                print(f"acknowledged {len(delivered)}", file=sys.stderr, flush=True)

    interval = 1.0 / float(records_per_second)
    started = time.monotonic()
    for index in range(int(count)):
        producer.produce(topic, value=str(index), partition=0, on_delivery=on_delivery)
        producer.poll(0)
        if index % 100 == 0:
            print(f"progress {index}", file=sys.stderr, flush=True)
        delay = started + (index + 1) * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    remaining = producer.flush(TIMEOUT_SECONDS)
    if remaining != 0:
        raise RuntimeError(f"{remaining} records undelivered, errors: {errors}")
    return {"delivered": len(delivered), "lastOffset": max(delivered, default=-1), "errors": errors}


def consume(bootstrap, topic, group, count):
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    records = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while len(records) < int(count):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(records)} of {count} records in {TIMEOUT_SECONDS} s")
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            records.append(
                {
                    "key": message.key().decode(),
                    "value": message.value().decode(),
                    "headers": [[name, value.decode()] for name, value in message.headers() or []],
                    "partition": message.partition(),
                    "offset": message.offset(),
                    "timestamp": message.timestamp()[1],
                }
            )
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return {"records": records}


def poll_until(consumers, done, what):
    """Polls every consumer in turn (a member rebalances only in poll) until done() holds."""
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not done():
        if time.monotonic() > deadline:
            sizes = [len(consumer.assignment()) for consumer in consumers]
            raise TimeoutError(f"{what} not reached in {TIMEOUT_SECONDS} s (assigned: {sizes})")
        for consumer in consumers:
            message = consumer.poll(0.1)
            if message is not None and message.error() is not None:
                raise KafkaException(message.error())


def rebalance(bootstrap, topic, group, partitions):
    partitions = int(partitions)

    def member():
        return Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )

    first, second = member(), None
    try:
        first.subscribe([topic])
        poll_until([first], lambda: len(first.assignment()) == partitions, "one member with all")
        alone = len(first.assignment())
        second = member()
        second.subscribe([topic])
        both = [first, second]

        def split_done():
            sizes = [len(consumer.assignment()) for consumer in both]
            return sum(sizes) == partitions and min(sizes) > 0

        poll_until(both, split_done, "the split")
        split = [len(first.assignment()), len(second.assignment())]
        second.close()
        second = None
        poll_until([first], lambda: len(first.assignment()) == partitions, "the leave")
        return {"alone": alone, "split": split, "afterLeave": len(first.assignment())}
    finally:
        first.close()
        if second is not None:
            second.close()


COMMANDS = {
    "create-topic": create_topic,
    "produce": produce,
    "consume": consume,
    "rebalance": rebalance,
    "produce-paced": produce_paced,
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(f"usage: {sys.argv[0]} {'|'.join(COMMANDS)} ARGS...", file=sys.stderr)
        sys.exit(2)
    try:
        print(json.dumps(COMMANDS[sys.argv[1]](*sys.argv[2:])))
    except Exception as error:  # noqa: BLE001: every failure is reported the same way
        print(f"{sys.argv[1]} failed: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
