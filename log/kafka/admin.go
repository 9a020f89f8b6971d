package kafka

import (
	"fmt"
	"sort"
	"strings"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopics answers CreateTopics. One node holds one replica: a
// replication factor above 1 is refused as Kafka refuses one larger than
// its broker count; 0 and below -1 as Kafka refuses them anywhere (-1 is
// the default, 1).
func (s *Server) createTopics(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		err := s.createTopic(t, req.ValidateOnly, &rt)
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly bool, rt *kmsg.CreateTopicsResponseTopic) error {
	if err := tlog.ValidateTopicName(t.Topic); err != nil {
		return err
	}
	parts := int(t.NumPartitions)
	if len(t.ReplicaAssignment) > 0 {
		// Kafka's rules and words (ReplicationControlManager.createTopic):
		// an assignment gives the partitions and replicas itself.
		if t.ReplicationFactor != -1 {
			return fmt.Errorf("%w: A manual partition assignment was specified, but replication factor was not set to -1", kerr.InvalidRequest)
		}
		if t.NumPartitions != -1 {
			return fmt.Errorf("%w: A manual partition assignment was specified, but numPartitions was not set to -1", kerr.InvalidRequest)
		}
		parts = len(t.ReplicaAssignment)
		seen := make(map[int32]bool, parts)
		for _, a := range t.ReplicaAssignment {
			if seen[a.Partition] {
				return fmt.Errorf("%w: Found multiple manual partition assignments for partition %d", kerr.InvalidReplicaAssignment, a.Partition)
			}
			seen[a.Partition] = true
			if len(a.Replicas) != 1 || a.Replicas[0] != nodeID {
				return fmt.Errorf("%w: replica assignment %v: this log is one node (id %d)", kerr.InvalidReplicaAssignment, a.Replicas, nodeID)
			}
		}
		for p := range int32(parts) {
			if !seen[p] {
				return fmt.Errorf("%w: partitions should be a consecutive 0-based integer sequence", kerr.InvalidReplicaAssignment)
			}
		}
	}
	if parts == -1 {
		parts = s.log.DefaultPartitionsOf(t.Topic)
	}
	if t.ReplicationFactor == 0 || t.ReplicationFactor < -1 {
		// Kafka's own words (ReplicationControlManager.validateNewTopic).
		return fmt.Errorf("%w: replication factor %d: replication factor must be larger than 0, or -1 to use the default value (this log holds 1 replica)", kerr.InvalidReplicationFactor, t.ReplicationFactor)
	}
	if t.ReplicationFactor > 1 {
		return fmt.Errorf("%w: replication factor %d is larger than the 1 broker of this log", kerr.InvalidReplicationFactor, t.ReplicationFactor)
	}
	cfg := map[string]string{}
	for _, c := range t.Configs {
		if c.Value != nil {
			cfg[c.Name] = *c.Value
		}
	}
	if err := tlog.ValidateConfig(cfg); err != nil {
		return err
	}
	if parts <= 0 {
		return fmt.Errorf("%w: %d partitions; ask for at least 1", tlog.ErrInvalidPartitions, parts)
	}
	create := s.log.CreateTopic
	if validateOnly {
		create = s.log.CheckCreateTopic // the checks of the real call, without the change
	}
	if err := create(t.Topic, parts, cfg); err != nil {
		s.warnIfNotOpened(t.Topic)
		return err
	}
	rt.NumPartitions, rt.ReplicationFactor = int32(parts), 1
	if d, err := s.log.DescribeTopic(t.Topic); err == nil {
		rt.TopicID = topicID(d.ID)
		for _, n := range tlog.ConfigNames() {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value = n, kmsg.StringPtr(d.Config[n])
			c.Source = int8(kmsg.ConfigSourceDefaultConfig)
			if _, ok := d.Overrides[n]; ok {
				c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
			}
			rt.Configs = append(rt.Configs, c)
		}
	}
	return nil
}

// deleteTopics answers DeleteTopics, by name or (v6) by topic id. The
// committed offsets topic is internal and cannot be deleted.
func (s *Server) deleteTopics(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type want struct {
		name string
		id   [16]byte
	}
	var wants []want
	for _, n := range req.TopicNames {
		wants = append(wants, want{name: n})
	}
	for _, t := range req.Topics {
		w := want{id: t.TopicID}
		if t.Topic != nil {
			w.name = *t.Topic
		}
		wants = append(wants, w)
	}
	for _, w := range wants {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.TopicID = w.id
		name := w.name
		var err error
		if name == "" {
			name, err = s.topicByID(w.id)
		}
		if name != "" {
			rt.Topic = kmsg.StringPtr(name)
		}
		if err == nil {
			if d, derr := s.log.DescribeTopic(name); derr == nil {
				rt.TopicID = topicID(d.ID)
			}
			err = s.log.DeleteTopic(name)
		}
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) topicByID(id [16]byte) (string, error) {
	for _, n := range s.log.ListTopics() {
		if d, err := s.log.DescribeTopic(n); err == nil && topicID(d.ID) == id {
			return n, nil
		}
	}
	return "", kerr.UnknownTopicID
}

// deleteRecords answers DeleteRecords (KIP-107): each partition's log
// start offset moves up to the offset asked for (-1: the high watermark),
// durably before the answer, which carries the new low watermark (this log
// is one replica: its log start offset). As Kafka (KafkaApis,
// ReplicaManager.deleteRecordsOnLocalLog, Partition.deleteRecordsOnLeader):
// an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION, an internal
// topic INVALID_TOPIC_EXCEPTION, a topic whose cleanup.policy lacks delete
// POLICY_VIOLATION, an offset past the high watermark (or negative other
// than -1) OFFSET_OUT_OF_RANGE; a failed partition answers low watermark -1.
func (s *Server) deleteRecords(req *kmsg.DeleteRecordsRequest) *kmsg.DeleteRecordsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			low, err := s.log.DeleteRecords(t.Topic, p.Partition, p.Offset)
			if err != nil {
				rp.ErrorCode, low = errorCode(err), -1
			}
			rp.LowWatermark = low
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createPartitions answers CreatePartitions: Count is the new total. A
// topic the log left closed cannot grow (any larger count is over the
// limit that left it closed): KAFKA_STORAGE_ERROR, with a message naming
// the limit that lets it grow.
func (s *Server) createPartitions(req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		for _, a := range t.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != nodeID {
				err = fmt.Errorf("%w: replica assignment %v: this log is one node (id %d)", kerr.InvalidReplicaAssignment, a.Replicas, nodeID)
			}
		}
		if err == nil {
			if req.ValidateOnly {
				// The checks of the real call, without the change.
				err = s.log.CheckCreatePartitions(t.Topic, int(t.Count))
			} else {
				err = s.log.CreatePartitions(t.Topic, int(t.Count))
			}
		}
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describeConfigs answers DescribeConfigs for topics (every topic config
// with its effective value and where it comes from) and for the broker
// (the log's defaults are not exported, so a broker has no configs here).
// A topic the log left closed is described from its stored config.
func (s *Server) describeConfigs(req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			// As Kafka (ConfigHelper.describeConfigs), from the stored
			// config: a topic the log left closed is described too.
			d, err := s.log.DescribeTopicConfig(r.ResourceName)
			if err != nil {
				rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
				break
			}
			wanted := map[string]bool{}
			for _, n := range r.ConfigNames {
				wanted[n] = true
			}
			for _, n := range tlog.ConfigNames() {
				if len(wanted) > 0 && !wanted[n] {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				c.Name, c.Value = n, kmsg.StringPtr(d.Config[n])
				_, override := d.Overrides[n]
				c.IsDefault = !override
				c.Source = kmsg.ConfigSourceDefaultConfig
				if override {
					c.Source = kmsg.ConfigSourceDynamicTopicConfig
				}
				c.ConfigType = configType(n)
				if req.IncludeDocumentation {
					c.Documentation = kmsg.StringPtr(tlog.ConfigDoc(n))
				}
				rr.Configs = append(rr.Configs, c)
			}
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			if r.ResourceName != "" && r.ResourceName != fmt.Sprint(nodeID) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("unknown broker %q; the only broker is %d", r.ResourceName, nodeID))
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("resource type %v is not supported", r.ResourceType))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func configType(name string) kmsg.ConfigType {
	switch name {
	case tlog.ConfigRetentionMs, tlog.ConfigRetentionBytes, tlog.ConfigSegmentMs, tlog.ConfigDeleteRetentionMs:
		return kmsg.ConfigTypeLong
	case tlog.ConfigSegmentBytes, tlog.ConfigMaxMessageBytes, tlog.ConfigMinInsyncReplicas:
		return kmsg.ConfigTypeInt
	case tlog.ConfigMinCleanableRatio:
		return kmsg.ConfigTypeDouble
	case tlog.ConfigCleanupPolicy:
		return kmsg.ConfigTypeList
	}
	return kmsg.ConfigTypeString
}

// alterConfigs answers AlterConfigs: the given configs replace every
// override of the topic. As Kafka alters the configs of a topic whose
// partitions are offline, those of a topic the log left closed are stored
// for when it opens.
func (s *Server) alterConfigs(req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := func() error {
			if r.ResourceType != kmsg.ConfigResourceTypeTopic {
				return fmt.Errorf("%w: only topic configs can be changed here", kerr.InvalidRequest)
			}
			d, err := s.log.DescribeTopicConfig(r.ResourceName)
			if err != nil {
				return err
			}
			set := map[string]string{}
			for _, c := range r.Configs {
				if c.Value != nil {
					set[c.Name] = *c.Value
				}
			}
			var remove []string
			for n := range d.Overrides {
				if _, ok := set[n]; !ok {
					remove = append(remove, n)
				}
			}
			sort.Strings(remove)
			if req.ValidateOnly {
				return tlog.ValidateConfig(set)
			}
			return s.log.AlterTopicConfig(r.ResourceName, set, remove)
		}()
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// incrementalAlterConfigs answers IncrementalAlterConfigs: SET and DELETE
// of single configs, APPEND and SUBTRACT of list values (cleanup.policy),
// for a topic the log left closed too (see alterConfigs).
func (s *Server) incrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := func() error {
			if r.ResourceType != kmsg.ConfigResourceTypeTopic {
				return fmt.Errorf("%w: only topic configs can be changed here", kerr.InvalidRequest)
			}
			d, err := s.log.DescribeTopicConfig(r.ResourceName)
			if err != nil {
				return err
			}
			set := map[string]string{}
			var remove []string
			for _, c := range r.Configs {
				val := ""
				if c.Value != nil {
					val = *c.Value
				}
				switch c.Op {
				case kmsg.IncrementalAlterConfigOpSet:
					set[c.Name] = val
				case kmsg.IncrementalAlterConfigOpDelete:
					remove = append(remove, c.Name)
				case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
					if configType(c.Name) != kmsg.ConfigTypeList {
						return fmt.Errorf("%w: %s is not a list config", tlog.ErrInvalidConfig, c.Name)
					}
					set[c.Name] = editList(d.Config[c.Name], val, c.Op == kmsg.IncrementalAlterConfigOpAppend)
				default:
					return fmt.Errorf("%w: unknown config operation %d", kerr.InvalidRequest, c.Op)
				}
			}
			if req.ValidateOnly {
				return tlog.ValidateConfig(set)
			}
			return s.log.AlterTopicConfig(r.ResourceName, set, remove)
		}()
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// editList adds or removes the items of a comma-separated value.
func editList(cur, items string, add bool) string {
	var out []string
	have := map[string]bool{}
	for _, v := range strings.Split(cur, ",") {
		if v = strings.TrimSpace(v); v != "" {
			have[v] = true
			out = append(out, v)
		}
	}
	for _, v := range strings.Split(items, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if add && !have[v] {
			out = append(out, v)
			have[v] = true
		}
		if !add {
			for i := 0; i < len(out); i++ {
				if out[i] == v {
					out = append(out[:i], out[i+1:]...)
					i--
				}
			}
		}
	}
	return strings.Join(out, ",")
}
