package catalog

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mcpfn/mcpfn/shared/mcp"
)

// toolItem is e's tool item at pk and sk, expiring at exp.
func toolItem(pk, sk string, e entry, exp types.AttributeValue) map[string]types.AttributeValue {
	item := itemKey(pk, sk)
	item[TTLAttribute] = exp
	item[attrToolHash] = &types.AttributeValueMemberB{Value: e.toolHash[:]}
	if e.tool.ModelName != e.tool.Name {
		item[attrModelName] = &types.AttributeValueMemberS{Value: e.tool.ModelName}
	}
	if e.zipped != nil {
		item[attrZipped] = &types.AttributeValueMemberB{Value: e.zipped}
		return item
	}
	t := e.tool
	item[attrName] = &types.AttributeValueMemberS{Value: t.Name}
	item[attrSchema] = &types.AttributeValueMemberB{Value: t.InputSchema}
	optS := func(name, v string) {
		if v != "" {
			item[name] = &types.AttributeValueMemberS{Value: v}
		}
	}
	optB := func(name string, v []byte) {
		if len(v) > 0 {
			item[name] = &types.AttributeValueMemberB{Value: v}
		}
	}
	optS(attrDescription, t.Description)
	optS(attrTitle, t.Title)
	optB(attrOutputSchema, t.OutputSchema)
	optB(attrAnnotations, encodeAnnotations(t.Annotations))
	optB(attrMeta, t.Meta)
	return item
}

func deleteRequest(pk, sk string) types.WriteRequest {
	return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: itemKey(pk, sk)}}
}

// manifestItem is part n of version's manifest: the marker (n 0, which
// also records the shards and the number of parts) or chunk n.
func manifestItem(id, version string, n, shards int, parts [][]byte, exp types.AttributeValue) map[string]types.AttributeValue {
	sk := chunkSortKey(version, n)
	if n == 0 {
		sk = markerSortKey(version)
	}
	it := itemKey(id, sk)
	it[attrManifest] = &types.AttributeValueMemberB{Value: parts[n]}
	it[TTLAttribute] = exp
	if n == 0 {
		it[attrShards] = &types.AttributeValueMemberN{Value: strconv.Itoa(shards)}
		it[attrChunks] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(parts))}
	}
	return it
}

// decodeToolItem reads a tool item, plain or compressed; one without
// model_name has its name's default model name.
func decodeToolItem(item map[string]types.AttributeValue) (mcp.Tool, error) {
	t, err := decodeToolFields(item)
	if err != nil {
		return mcp.Tool{}, err
	}
	if t.ModelName = stringAttr(item, attrModelName); t.ModelName == "" {
		t.ModelName = defaultModelName(t.Name)
	}
	return t, nil
}

func decodeToolFields(item map[string]types.AttributeValue) (mcp.Tool, error) {
	if z, ok := item[attrZipped].(*types.AttributeValueMemberB); ok {
		return gunzipTool(z.Value)
	}
	b, ok := item[attrSchema].(*types.AttributeValueMemberB)
	if !ok {
		return mcp.Tool{}, fmt.Errorf("%w: no %s", errBadTool, attrSchema)
	}
	a, err := decodeAnnotations(binaryAttr(item, attrAnnotations))
	if err != nil {
		return mcp.Tool{}, err
	}
	return mcp.Tool{
		Name:         stringAttr(item, attrName),
		Title:        stringAttr(item, attrTitle),
		Description:  stringAttr(item, attrDescription),
		InputSchema:  b.Value,
		OutputSchema: nonEmpty(binaryAttr(item, attrOutputSchema)),
		Annotations:  a,
		Meta:         nonEmpty(binaryAttr(item, attrMeta)),
	}, nil
}

// toolShard is the shard of the tool whose name hashes to nameHash.
func toolShard(nameHash []byte, shards int) int {
	return int(binary.BigEndian.Uint16(nameHash)) % shards
}

func markerSortKey(version string) string { return "v#" + version }

func headKey(id string) map[string]types.AttributeValue { return itemKey(id, HeadSortKey) }

func itemKey(id, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		PartitionKey: &types.AttributeValueMemberS{Value: id},
		SortKey:      &types.AttributeValueMemberS{Value: sk},
	}
}
