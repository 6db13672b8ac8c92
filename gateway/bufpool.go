package gateway

import "sync"

// copyBufferSize is the size of the buffers the proxy copies response
// bodies through: net/http/httputil's own default, 32 KiB.
const copyBufferSize = 32 << 10

// bufferPool lends the proxy its copy buffers, so a response does not
// allocate (and the collector does not reclaim) 32 KiB of its own; it
// implements httputil.BufferPool.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}}
}

// Get returns a buffer of copyBufferSize bytes.
func (bp *bufferPool) Get() []byte { return *bp.p.Get().(*[]byte) }

// Put takes back a buffer Get returned; any other size is dropped.
func (bp *bufferPool) Put(b []byte) {
	if cap(b) != copyBufferSize {
		return
	}
	b = b[:copyBufferSize]
	bp.p.Put(&b)
}
