"""The record-level API from Python, as its README example uses it: a client generated from
proto/ (grpcio-tools' protoc on the descriptor set `buf build` makes) publishes keyed records
to a topic and consumes them back through a consumer group, then shows how a failed call's
status details read. record-clients.spec.ts runs it and checks what it prints.

usage: record_client.py GENERATED_DIR GATEWAY TOPIC GROUP COUNT
Prints one JSON object: where each key landed, what the group delivered, and the error details.
"""
import json
import sys

sys.path.insert(0, sys.argv[1])

import grpc  # noqa: E402
from google.rpc import error_details_pb2  # noqa: E402
from grpc_status import rpc_status  # noqa: E402
from spool.v1 import record_pb2, record_pb2_grpc  # noqa: E402

RECORDS_PER_CALL = 1_000


def main(gateway: str, topic: str, group: str, count: int) -> None:
    channel = grpc.insecure_channel(gateway)
    records = record_pb2_grpc.RecordServiceStub(channel)

    landed = {}
    for first in range(0, count, RECORDS_PER_CALL):
        keys = [f"key-{index}" for index in range(first, min(first + RECORDS_PER_CALL, count))]
        response = records.Publish(
            record_pb2.PublishRequest(
                topic=topic,
                records=[
                    record_pb2.PublishRecord(key=key.encode(), value=f"value of {key}".encode())
                    for key in keys
                ],
                idempotency_key=f"python-{topic}-{first}",
            ),
            timeout=30,
        )
        for key, result in zip(keys, response.results):
            if result.HasField("error"):
                raise SystemExit(f"{key}: {result.error.code}: {result.error.message}")
            landed[key] = result.partition

    consumed = {}
    stream = records.Subscribe(
        record_pb2.SubscribeRequest(
            topic=topic, group_id=group, offset_reset=record_pb2.OFFSET_RESET_EARLIEST
        ),
        timeout=60,
    )
    subscription_id = None
    for response in stream:
        if response.subscription_id:
            subscription_id = response.subscription_id
        for record in response.records:
            consumed[record.key.decode()] = {
                "partition": record.partition,
                "value": record.value.decode(),
            }
        if len(consumed) >= count:
            break
    records.Commit(record_pb2.CommitRequest(subscription_id=subscription_id), timeout=30)
    stream.cancel()

    try:
        records.Publish(
            record_pb2.PublishRequest(
                topic="no-such-topic", records=[record_pb2.PublishRecord(value=b"x")]
            ),
            timeout=30,
        )
        error = None
    except grpc.RpcError as failure:
        status = rpc_status.from_call(failure)
        info = error_details_pb2.ErrorInfo()
        status.details[0].Unpack(info)
        error = {
            "grpcCode": failure.code().name,
            "reason": info.reason,
            "domain": info.domain,
            "retriable": info.metadata["retriable"],
        }

    print(json.dumps({"landed": landed, "consumed": consumed, "error": error}))


if __name__ == "__main__":
    main(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
