// The record-level API from Go, as its README example uses it: a client generated from proto/
// (buf generate with protoc-gen-go and protoc-gen-go-grpc) publishes keyed records to a topic
// and consumes them back through a consumer group, then shows how a failed call's status
// details read. record-clients.spec.ts runs it and checks what it prints.
//
// usage: go run . GATEWAY TOPIC GROUP COUNT
// Prints one JSON object: where each key landed, what the group delivered, and the error details.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	spoolv1 "spool.test/recordclient/gen/spool/v1"
)

const recordsPerCall = 1_000

type consumedRecord struct {
	Partition int32  `json:"partition"`
	Value     string `json:"value"`
}

type errorReport struct {
	GrpcCode  string `json:"grpcCode"`
	Reason    string `json:"reason"`
	Domain    string `json:"domain"`
	Retriable string `json:"retriable"`
}

func main() {
	gateway, topic, group := os.Args[1], os.Args[2], os.Args[3]
	count, err := strconv.Atoi(os.Args[4])
	if err != nil {
		log.Fatalf("COUNT: %v", err)
	}
	connection, err := grpc.NewClient(gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer connection.Close()
	records := spoolv1.NewRecordServiceClient(connection)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	landed := map[string]int32{}
	for first := 0; first < count; first += recordsPerCall {
		request := &spoolv1.PublishRequest{
			Topic:          topic,
			IdempotencyKey: fmt.Sprintf("go-%s-%d", topic, first),
		}
		for index := first; index < first+recordsPerCall && index < count; index++ {
			key := fmt.Sprintf("key-%d", index)
			request.Records = append(request.Records, &spoolv1.PublishRecord{
				Key:   []byte(key),
				Value: []byte("value of " + key),
			})
		}
		response, err := records.Publish(ctx, request)
		if err != nil {
			log.Fatalf("publish: %v", err)
		}
		for position, result := range response.Results {
			key := string(request.Records[position].Key)
			if result.Error != nil {
				log.Fatalf("%s: %s: %s", key, result.Error.Code, result.Error.Message)
			}
			landed[key] = result.Partition
		}
	}

	consumed := map[string]consumedRecord{}
	streamCtx, stopStream := context.WithCancel(ctx)
	stream, err := records.Subscribe(streamCtx, &spoolv1.SubscribeRequest{
		Topic:       topic,
		GroupId:     group,
		OffsetReset: spoolv1.OffsetReset_OFFSET_RESET_EARLIEST,
	})
	if err != nil {
		log.Fatalf("subscribe: %v", err)
	}
	subscriptionID := ""
	for len(consumed) < count {
		response, err := stream.Recv()
		if err != nil {
			log.Fatalf("subscribe: %v", err)
		}
		if response.SubscriptionId != "" {
			subscriptionID = response.SubscriptionId
		}
		for _, record := range response.Records {
			consumed[string(record.Key)] = consumedRecord{record.Partition, string(record.Value)}
		}
	}
	if _, err := records.Commit(ctx, &spoolv1.CommitRequest{SubscriptionId: subscriptionID}); err != nil {
		log.Fatalf("commit: %v", err)
	}
	stopStream()

	var report *errorReport
	_, err = records.Publish(ctx, &spoolv1.PublishRequest{
		Topic:   "no-such-topic",
		Records: []*spoolv1.PublishRecord{{Value: []byte("x")}},
	})
	if failure, ok := status.FromError(err); ok && err != nil {
		for _, detail := range failure.Details() {
			if info, ok := detail.(*errdetails.ErrorInfo); ok {
				report = &errorReport{failure.Code().String(), info.Reason, info.Domain, info.Metadata["retriable"]}
			}
		}
	}

	output, err := json.Marshal(map[string]any{"landed": landed, "consumed": consumed, "error": report})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(output))
}
