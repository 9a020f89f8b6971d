package rest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// GroupPartitionJSON is one row of a group description.
type GroupPartitionJSON struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	LogEndOffset  int64  `json:"log_end_offset"`
	Lag           int64  `json:"lag"`
	// The member that owns the partition, when one does.
	ConsumerID string `json:"consumer_id,omitempty"`
	Host       string `json:"host,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
}

// GroupMemberJSON is one active member of a group: a consumer joined
// through the Kafka listener, or a sink connector's task.
type GroupMemberJSON struct {
	ConsumerID string `json:"consumer_id"`
	Host       string `json:"host"`
	ClientID   string `json:"client_id"`
	// Connector names the sink connector when the member is one.
	Connector string `json:"connector,omitempty"`
}

// GroupJSON describes a group: its partitions and its active members.
type GroupJSON struct {
	Group      string               `json:"group"`
	Partitions []GroupPartitionJSON `json:"partitions"`
	Members    []GroupMemberJSON    `json:"members"`
}

// sinkOwner is a sink connector that consumes as a group while it is not
// STOPPED (a paused task keeps its place in the group, as in Kafka Connect).
type sinkOwner struct {
	name  string
	spec  engine.ConnectorSpec
	tasks int
}

// sinkOwners returns the sink connectors that own a group.
func (s *Server) sinkOwners(group string) []sinkOwner {
	var out []sinkOwner
	for _, n := range s.worker.Connectors() {
		spec, err := s.worker.Spec(n)
		if err != nil || spec.Kind != connect.KindSink || spec.Group != group {
			continue
		}
		st, err := s.worker.Status(n)
		if err != nil || st.State == engine.StateStopped {
			continue
		}
		out = append(out, sinkOwner{name: n, spec: spec, tasks: max(len(st.Tasks), 1)})
	}
	return out
}

// member returns the group member a sink task is, named as Kafka Connect
// names its sink consumers.
func (s *Server) member(o sinkOwner, task int) GroupMemberJSON {
	id := fmt.Sprintf("connector-consumer-%s-%d", o.name, task)
	host := s.worker.ID()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return GroupMemberJSON{ConsumerID: id, Host: "/" + host, ClientID: id, Connector: o.name}
}

// reads reports whether a sink reads a topic.
func (o sinkOwner) reads(topic string) bool {
	if o.spec.TopicsRegex != "" {
		re, err := regexp.Compile("^(?:" + o.spec.TopicsRegex + ")$")
		return err == nil && re.MatchString(topic) && !strings.HasPrefix(topic, "__")
	}
	return slices.Contains(o.spec.Topics, topic)
}

// checkIdle refuses an operation on a group that a sink connector owns
// (Kafka's GROUP_NOT_EMPTY): the sink would overwrite its offsets.
func (s *Server) checkIdle(group, op string) error {
	owners := s.sinkOwners(group)
	if len(owners) == 0 {
		return nil
	}
	n := owners[0].name
	return fmt.Errorf("%s group %s: %w: sink connector %s consumes as this group and would overwrite its offsets; stop the connector first, then change its offsets: tributary connectors stop %s, then tributary connectors offsets %s --set …|--reset (REST: PUT /connectors/%s/stop, then PATCH|DELETE /connectors/%s/offsets)",
		op, group, tlog.ErrGroupNotEmpty, n, n, n, n, n)
}

func (s *Server) describeGroup(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	group := r.PathValue("group")
	owners := s.sinkOwners(group)
	lags, err := s.log.Groups().Describe(group)
	if err != nil && !(errors.Is(err, tlog.ErrUnknownGroup) && len(owners) > 0) {
		s.fail(w, err)
		return
	}
	out := GroupJSON{Group: group, Partitions: []GroupPartitionJSON{}, Members: []GroupMemberJSON{}}
	seen := map[string]bool{}
	addMember := func(m GroupMemberJSON) {
		if !seen[m.ConsumerID] {
			seen[m.ConsumerID] = true
			out.Members = append(out.Members, m)
		}
	}
	have := map[tlog.TopicPartition]bool{}
	for _, l := range lags {
		have[tlog.TopicPartition{Topic: l.Topic, Partition: l.Partition}] = true
		row := GroupPartitionJSON{Topic: l.Topic, Partition: l.Partition, CurrentOffset: l.CurrentOffset, LogEndOffset: l.LogEndOffset, Lag: l.Lag,
			ConsumerID: l.ConsumerID, Host: l.Host, ClientID: l.ClientID}
		if row.ConsumerID != "" {
			addMember(GroupMemberJSON{ConsumerID: l.ConsumerID, Host: l.Host, ClientID: l.ClientID})
		}
		out.Partitions = append(out.Partitions, row)
	}
	// A sink's single task owns every partition of the topics it reads.
	for _, o := range owners {
		m := s.member(o, 0)
		addMember(m)
		for i := range out.Partitions {
			if p := &out.Partitions[i]; p.ConsumerID == "" && o.reads(p.Topic) {
				p.ConsumerID, p.Host, p.ClientID = m.ConsumerID, m.Host, m.ClientID
			}
		}
		for _, t := range s.log.ListTopics() {
			if !o.reads(t) {
				continue
			}
			d, err := s.log.DescribeTopic(t)
			if err != nil {
				continue // deleted meanwhile
			}
			for _, p := range d.Partitions {
				if have[tlog.TopicPartition{Topic: t, Partition: p.Partition}] {
					continue
				}
				out.Partitions = append(out.Partitions, GroupPartitionJSON{Topic: t, Partition: p.Partition, CurrentOffset: -1, LogEndOffset: p.LogEndOffset, Lag: -1,
					ConsumerID: m.ConsumerID, Host: m.Host, ClientID: m.ClientID})
			}
		}
	}
	slices.SortFunc(out.Partitions, func(a, b GroupPartitionJSON) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	writeJSON(w, 200, out)
}
