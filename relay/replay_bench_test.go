package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// BenchmarkReplayBesideLiveTraffic measures whether a replay slows the
// live relay (docs/benchmarks.md, "Replay"): one relay drains 50,000
// pending events while 50,000 retained, published events are replayed to
// the replay topic at a given rate, against the same drain with no replay.
//
//	go test -run '^$' -bench BenchmarkReplayBesideLiveTraffic -benchtime 1x -timeout 30m ./relay/
func BenchmarkReplayBesideLiveTraffic(b *testing.B) {
	b.Cleanup(func() { purgeBinlogs(b) })
	for _, rate := range []int{0, 500, 2000} {
		b.Run(fmt.Sprintf("replay-%d-per-s", rate), func(b *testing.B) { benchLiveWithReplay(b, rate) })
	}
}

func benchLiveWithReplay(b *testing.B, rate int) {
	const live, retained = 50_000, 50_000
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabase(b)
	topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12})
	replayTopic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12})
	bulkLoad(b, d, 0, retained+live, benchAggregates)
	// The first half was published long ago: the replay's source.
	if _, err := d.DB.Exec("UPDATE outbox_events SET published_at = NOW(6) - INTERVAL 1 HOUR WHERE aggregate_seq <= ?",
		retained/benchAggregates); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replayed := make(chan int64, 1)
	if rate > 0 {
		db, err := mysql.Open(ctx, d.DSN)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, ClientID: "herald-bench-replay"})
		if err != nil {
			b.Fatal(err)
		}
		defer producer.Close()
		rp, err := relay.NewReplayer(relay.ReplayConfig{
			Checkpoint: "bench", Rate: rate, Topics: map[string]string{"order": topic},
			TopicFor:  func(string) string { return replayTopic },
			Selection: store.ReplaySelection{From: time.Now().Add(-24 * time.Hour), To: time.Now().Add(time.Hour)},
		}, mysql.NewStore(db), producer)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			n, _ := rp.Run(ctx)
			replayed <- n
		}()
	}

	stats := &claimStats{}
	b.ResetTimer()
	start := time.Now()
	stop := runRelays(b, d, brokers, topic, 1, stats)
	waitDrained(b, d.DB)
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	cancel()
	res := drainResult{events: live, elapsed: elapsed, binlog: -1}
	res.report(b, fmt.Sprintf("replay %d/s", rate))
	if rate > 0 {
		n := <-replayed
		fmt.Printf("           the replay produced %d records meanwhile (%.0f/s)\n", n, float64(n)/elapsed.Seconds())
	}
}
