package kafka

import (
	"encoding/hex"
	"errors"
	"slices"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicID turns the log's topic id (32 hex digits) into Kafka's UUID.
func topicID(id string) [16]byte {
	var out [16]byte
	if b, err := hex.DecodeString(id); err == nil && len(b) == 16 {
		copy(out[:], b)
	}
	return out
}

// metadata answers Metadata: this one broker, leader of every partition,
// and the topics asked for (all when the list is null, or empty in v0).
// Unknown topics are created when the client allows it (v4+; always before)
// and the listener does not forbid it. A topic the log left closed is
// listed without leaders, never created again (not_opened.go).
func (s *Server) metadata(cc *conn, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := s.advertised(cc)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = nodeID, host, port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ClusterID = kmsg.StringPtr(s.log.ClusterID())
	resp.ControllerID = nodeID

	var names []string
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		names = s.log.ListTopics()
		for _, no := range s.log.NotOpenedTopics() {
			names = append(names, no.Topic)
		}
		slices.Sort(names)
	} else {
		byID := map[[16]byte]string{}
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
				continue
			}
			if len(byID) == 0 {
				for _, n := range s.log.ListTopics() {
					if d, err := s.log.DescribeTopic(n); err == nil {
						byID[topicID(d.ID)] = n
					}
				}
				for _, no := range s.log.NotOpenedTopics() {
					byID[topicID(no.ID)] = no.Topic
				}
			}
			if n, ok := byID[t.TopicID]; ok {
				names = append(names, n)
			} else {
				rt := kmsg.NewMetadataResponseTopic()
				rt.TopicID = t.TopicID
				rt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, rt)
			}
		}
	}
	autoCreate := !s.opts.DisableAutoCreate && s.log.AutoCreate() && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.IsInternal = name == tlog.OffsetsTopic
		d, err := s.log.DescribeTopic(name)
		var notOpened *tlog.TopicNotOpenedError
		if errors.As(err, &notOpened) {
			resp.Topics = append(resp.Topics, notOpenedMetadata(notOpened))
			if !all {
				s.warnIfNotOpened(name)
			}
			continue
		}
		if errors.Is(err, tlog.ErrUnknownTopic) && autoCreate && name != tlog.OffsetsTopic {
			// (__consumer_offsets is made by the first commit, compacted:
			// until then it is unknown, not made by a client's asking.)
			err = s.log.CreateTopic(name, s.log.DefaultPartitionsOf(name), nil)
			if err == nil || errors.Is(err, tlog.ErrTopicExists) {
				d, err = s.log.DescribeTopic(name)
			}
		}
		if err != nil {
			rt.ErrorCode = errorCode(err)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = topicID(d.ID)
		for _, p := range d.Partitions {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Leader = nodeID
			rp.LeaderEpoch = -1
			rp.Replicas = []int32{nodeID}
			rp.ISR = []int32{nodeID}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// findCoordinator answers FindCoordinator: this broker coordinates every
// group. Transaction coordinators do not exist here.
func (s *Server) findCoordinator(cc *conn, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port := s.advertised(cc)
	answer := func(key string) (int16, *string) {
		if req.CoordinatorType != 0 {
			return kerr.TransactionalIDAuthorizationFailed.Code, kmsg.StringPtr("transactions are not supported by this listener")
		}
		if key == "" {
			return kerr.InvalidGroupID.Code, kmsg.StringPtr("empty group id")
		}
		return 0, nil
	}
	if req.Version >= 4 {
		for _, k := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = k
			c.ErrorCode, c.ErrorMessage = answer(k)
			c.NodeID, c.Host, c.Port = nodeID, host, port
			if c.ErrorCode != 0 {
				c.NodeID, c.Host, c.Port = -1, "", -1
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
	resp.ErrorCode, resp.ErrorMessage = answer(req.CoordinatorKey)
	resp.NodeID, resp.Host, resp.Port = nodeID, host, port
	if resp.ErrorCode != 0 {
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
	}
	return resp
}
