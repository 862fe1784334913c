package client

import (
	"context"

	"github.com/crucible-sandbox/crucible/api"
)

// Images lists the images the server offers (GET /v1/images), the default
// first: a request names one in its Image field (sandbox.Request.Image,
// sandbox.SessionRequest.Image) to run in it.
func (c *Client) Images(ctx context.Context) (*api.ImageList, error) {
	var ans api.ImageList
	if err := c.call(ctx, request{method: "GET", path: "/v1/images"}, nil, &ans); err != nil {
		return nil, err
	}
	return &ans, nil
}
