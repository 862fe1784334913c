package e2bapi

import (
	"encoding/json"
	"errors"
)

// envdCodec is the Connect codec of the envd services: JSON, as E2B's SDK
// speaks it (connect-web with useBinaryFormat false), over our own plain
// Go structs (envd_messages.go).
//
// Why not protobuf: connect-go's built-in "json" codec marshals only
// proto.Message values, which would mean generating Go code from E2B's
// .proto files (Apache-2.0, not ours to commit) or re-authoring them and
// adding a protoc step to the build. The SDK sends and reads nothing but
// JSON, so a codec named "json" over encoding/json, registered in place of
// the built-in one, serves the same wire format with structs whose field
// names and shapes follow protobuf's JSON mapping (lowerCamelCase names,
// 64-bit integers as strings, bytes as base64, enums by name, a oneof as
// the one field set). A client asking for binary protobuf gets connect's
// own "proto" codec, which refuses these types: an error, never a
// misread message.
type envdCodec struct{}

// Name is "json": connect maps application/json and
// application/connect+json to it.
func (envdCodec) Name() string { return "json" }

// Marshal encodes a message as JSON.
func (envdCodec) Marshal(msg any) ([]byte, error) { return json.Marshal(msg) }

// Unmarshal decodes a JSON message. An empty body is the empty message,
// as protobuf's JSON codec has it; unknown fields are ignored, as
// connect's own JSON codec ignores them (a newer SDK may send more).
func (envdCodec) Unmarshal(data []byte, msg any) error {
	if len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, msg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return errors.New("field " + te.Field + ": must be a JSON " + te.Type.Kind().String() + ", got " + te.Value)
		}
		return err
	}
	return nil
}
