package web

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/uncaged/uwf/moderator"
)

// Geometry of the drawing, in SVG user units (pixels at 100%).
const (
	nodeHeight  = 34.0
	nodeMinW    = 84.0
	charWidth   = 7.6 // a 13px sans-serif character, generously
	nodePadX    = 16.0
	layerGap    = 78.0 // vertical space between two layers
	nodeGap     = 40.0 // horizontal space between two nodes of a layer
	dummyWidth  = 18.0 // the width a long edge takes in a layer it crosses
	margin      = 24.0
	loopReach   = 30.0 // how far a self-loop bulges to the right
	sweepRounds = 8    // barycentre sweeps (down and up) of crossing reduction
)

// graphNode is a role, $START, $END or a dummy (a long edge crossing a layer).
type graphNode struct {
	name    string
	dummy   bool
	layer   int
	order   int
	x, y, w float64 // centre x, top y, width
}

// graphEdge is one drawn edge: every status routing from one role to another,
// labels joined.
type graphEdge struct {
	from, to string
	labels   []string
	back     bool     // reversed for layering (it goes up the drawing)
	chain    []string // the node names it passes through, from upper to lower layer
}

// Layout is a routing graph placed for drawing: layers by longest path from
// $START with back edges reversed, dummy nodes on long edges, orders chosen
// by barycentre sweeps. It is built by [LayoutGraph] and drawn by
// [Layout.SVG].
type Layout struct {
	nodes   map[string]*graphNode
	layers  [][]string
	edges   []*graphEdge
	width   float64
	height  float64
	current string
}

// LayoutGraph places graph g's roles: $START on top, $END at the bottom (if
// an edge reaches it), every role listed in roles even if no edge reaches it.
// current, if not "", is the role to mark as running. The result depends
// only on its arguments: the same graph is always drawn the same way.
func LayoutGraph(g moderator.Graph, roles []string, current string) *Layout {
	l := &Layout{nodes: map[string]*graphNode{}, current: current}
	add := func(n string) {
		if _, ok := l.nodes[n]; !ok {
			l.nodes[n] = &graphNode{name: n}
		}
	}
	add(moderator.Start)
	for _, r := range roles {
		add(r)
	}
	byPair := map[[2]string]*graphEdge{}
	for _, from := range slices.Sorted(maps.Keys(g)) {
		add(from)
		for _, status := range slices.Sorted(maps.Keys(g[from])) {
			to := g[from][status].Role
			add(to)
			k := [2]string{from, to}
			e := byPair[k]
			if e == nil {
				e = &graphEdge{from: from, to: to}
				byPair[k] = e
				l.edges = append(l.edges, e)
			}
			e.labels = append(e.labels, status)
		}
	}
	l.reverseBackEdges(g)
	l.assignLayers()
	l.addDummies()
	l.reduceCrossings()
	l.place()
	return l
}

// names returns the node names in a fixed order: $START, the roles sorted,
// $END.
func (l *Layout) names() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(l.nodes)) {
		if n != moderator.Start && n != moderator.End && !l.nodes[n].dummy {
			out = append(out, n)
		}
	}
	out = append([]string{moderator.Start}, out...)
	if _, ok := l.nodes[moderator.End]; ok {
		out = append(out, moderator.End)
	}
	return out
}

// reverseBackEdges marks the edges that close a cycle in a depth-first walk
// from $START (then from every role it did not reach, in name order).
func (l *Layout) reverseBackEdges(g moderator.Graph) {
	out := map[string][]*graphEdge{}
	for _, e := range l.edges {
		out[e.from] = append(out[e.from], e)
	}
	const (
		unseen = iota
		open
		closed
	)
	state := map[string]int{}
	var visit func(n string)
	visit = func(n string) {
		state[n] = open
		for _, e := range out[n] {
			switch {
			case e.from == e.to:
				// a self-loop is drawn beside its node
			case state[e.to] == open:
				e.back = true
			case state[e.to] == unseen:
				visit(e.to)
			}
		}
		state[n] = closed
	}
	for _, n := range l.names() {
		if state[n] == unseen {
			visit(n)
		}
	}
}

// upper and lower are an edge's ends in layering order.
func (e *graphEdge) upper() string {
	if e.back {
		return e.to
	}
	return e.from
}

func (e *graphEdge) lower() string {
	if e.back {
		return e.from
	}
	return e.to
}

// assignLayers puts each node one layer below its lowest predecessor
// (longest path from the sources), and $END below everything.
func (l *Layout) assignLayers() {
	names := l.names()
	preds := map[string][]string{}
	for _, e := range l.edges {
		if e.from != e.to {
			preds[e.lower()] = append(preds[e.lower()], e.upper())
		}
	}
	done := map[string]bool{}
	var layer func(n string) int
	layer = func(n string) int {
		if done[n] {
			return l.nodes[n].layer
		}
		done[n] = true // the graph is acyclic now; this only guards bad input
		best := 0
		for _, p := range preds[n] {
			best = max(best, layer(p)+1)
		}
		l.nodes[n].layer = best
		return best
	}
	deepest := 0
	for _, n := range names {
		if n != moderator.End {
			deepest = max(deepest, layer(n))
		}
	}
	if end, ok := l.nodes[moderator.End]; ok {
		done[moderator.End] = true
		end.layer = deepest + 1
	}
	l.layers = make([][]string, 0, deepest+2)
	for _, n := range names {
		for len(l.layers) <= l.nodes[n].layer {
			l.layers = append(l.layers, nil)
		}
		i := l.nodes[n].layer
		l.layers[i] = append(l.layers[i], n)
	}
}

// addDummies gives an edge spanning more than one layer a dummy node in
// each layer between its ends, and records its chain.
func (l *Layout) addDummies() {
	for i, e := range l.edges {
		up, lo := l.nodes[e.upper()], l.nodes[e.lower()]
		e.chain = []string{up.name}
		for k := up.layer + 1; k < lo.layer; k++ {
			d := &graphNode{name: fmt.Sprintf("\x00%d.%d", i, k), dummy: true, layer: k, w: dummyWidth}
			l.nodes[d.name] = d
			l.layers[k] = append(l.layers[k], d.name)
			e.chain = append(e.chain, d.name)
		}
		if e.from != e.to {
			e.chain = append(e.chain, lo.name)
		}
	}
}

// segments returns every edge segment between adjacent layers, as
// upper-lower node name pairs.
func (l *Layout) segments() [][2]string {
	var s [][2]string
	for _, e := range l.edges {
		for i := 1; i < len(e.chain); i++ {
			s = append(s, [2]string{e.chain[i-1], e.chain[i]})
		}
	}
	return s
}

// crossings counts the crossing segment pairs under the current orders.
func (l *Layout) crossings(segs [][2]string) int {
	n := 0
	for i, a := range segs {
		for _, b := range segs[i+1:] {
			a0, a1, b0, b1 := l.nodes[a[0]], l.nodes[a[1]], l.nodes[b[0]], l.nodes[b[1]]
			if a0.layer != b0.layer {
				continue
			}
			if (a0.order-b0.order)*(a1.order-b1.order) < 0 {
				n++
			}
		}
	}
	return n
}

// reduceCrossings sweeps down and up, ordering each layer by the mean order
// of its neighbours in the layer just swept, and keeps the best orders seen.
func (l *Layout) reduceCrossings() {
	setOrders := func() {
		for _, layer := range l.layers {
			for i, n := range layer {
				l.nodes[n].order = i
			}
		}
	}
	setOrders()
	segs := l.segments()
	up, down := map[string][]string{}, map[string][]string{}
	for _, s := range segs {
		down[s[0]] = append(down[s[0]], s[1])
		up[s[1]] = append(up[s[1]], s[0])
	}
	best := l.crossings(segs)
	bestLayers := cloneLayers(l.layers)
	sortBy := func(k int, nb map[string][]string) {
		bary := map[string]float64{}
		for _, n := range l.layers[k] {
			ns := nb[n]
			if len(ns) == 0 {
				bary[n] = float64(l.nodes[n].order) // stays where it is
				continue
			}
			sum := 0.0
			for _, m := range ns {
				sum += float64(l.nodes[m].order)
			}
			bary[n] = sum / float64(len(ns))
		}
		slices.SortStableFunc(l.layers[k], func(a, b string) int { return cmp.Compare(bary[a], bary[b]) })
		for i, n := range l.layers[k] {
			l.nodes[n].order = i
		}
	}
	for round := 0; round < sweepRounds && best > 0; round++ {
		if round%2 == 0 {
			for k := 1; k < len(l.layers); k++ {
				sortBy(k, up)
			}
		} else {
			for k := len(l.layers) - 2; k >= 0; k-- {
				sortBy(k, down)
			}
		}
		if c := l.crossings(segs); c < best {
			best, bestLayers = c, cloneLayers(l.layers)
		}
	}
	l.layers = bestLayers
	setOrders()
}

func cloneLayers(ls [][]string) [][]string {
	out := make([][]string, len(ls))
	for i, l := range ls {
		out[i] = slices.Clone(l)
	}
	return out
}

// place gives every node its width and position: layers top to bottom,
// each centred on the widest.
func (l *Layout) place() {
	widths := make([]float64, len(l.layers))
	for k, layer := range l.layers {
		for i, n := range layer {
			nd := l.nodes[n]
			if !nd.dummy {
				nd.w = max(nodeMinW, float64(len([]rune(n)))*charWidth+2*nodePadX)
			}
			if i > 0 {
				widths[k] += nodeGap
			}
			widths[k] += nd.w
		}
	}
	widest := slices.Max(widths)
	loops := false
	for _, e := range l.edges {
		loops = loops || e.from == e.to
	}
	for k, layer := range l.layers {
		x := margin + (widest-widths[k])/2
		for _, n := range layer {
			nd := l.nodes[n]
			nd.x = x + nd.w/2
			nd.y = margin + float64(k)*(nodeHeight+layerGap)
			x += nd.w + nodeGap
		}
	}
	l.width = widest + 2*margin
	if loops {
		l.width += loopReach
	}
	l.height = 2*margin + float64(len(l.layers))*nodeHeight + float64(len(l.layers)-1)*layerGap
}

// ports spreads the edges meeting a node's top or bottom side along it,
// ordered by where their other end lies, so that two edges between the same
// pair of nodes (one down, one back up) do not overlap.
func (l *Layout) ports() map[[2]string]float64 {
	type end struct {
		edge  int
		other float64
		side  string // "top" or "bottom"
		node  string
	}
	bySide := map[[2]string][]end{}
	for i, e := range l.edges {
		if e.from == e.to {
			continue
		}
		a, b := e.chain[0], e.chain[1]
		bySide[[2]string{a, "bottom"}] = append(bySide[[2]string{a, "bottom"}], end{i, l.nodes[b].x, "bottom", a})
		z, y := e.chain[len(e.chain)-1], e.chain[len(e.chain)-2]
		bySide[[2]string{z, "top"}] = append(bySide[[2]string{z, "top"}], end{i, l.nodes[y].x, "top", z})
	}
	out := map[[2]string]float64{}
	for _, k := range slices.SortedFunc(maps.Keys(bySide), func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
	}) {
		ends := bySide[k]
		slices.SortStableFunc(ends, func(a, b end) int {
			return cmp.Or(cmp.Compare(a.other, b.other), cmp.Compare(a.edge, b.edge))
		})
		nd := l.nodes[k[0]]
		span := nd.w * 0.6
		if nd.dummy {
			span = 0
		}
		for i, e := range ends {
			x := nd.x
			if len(ends) > 1 {
				x = nd.x - span/2 + span*float64(i)/float64(len(ends)-1)
			}
			out[[2]string{fmt.Sprint(e.edge), e.side}] = x
		}
	}
	return out
}

// num formats a coordinate for the SVG: at most one decimal, no "-0".
func num(f float64) string {
	f = math.Round(f*10) / 10
	if f == 0 {
		f = 0
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".")
}

// esc escapes text for an SVG text node or attribute value.
func esc(s string) string { return html.EscapeString(s) }

// SVG draws the layout as a standalone SVG document (no script, no external
// reference; every label escaped). Nodes and edges carry classes the
// viewer's stylesheet colours ("node role", "node start", "node end",
// "node current", "edge", "edge back", "edge-label"); the presentation
// attributes give a readable drawing without it.
func (l *Layout) SVG() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="routing graph">`+"\n",
		num(l.width), num(l.height), num(l.width), num(l.height))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#7a869a"/></marker></defs>` + "\n")
	ports := l.ports()
	for i, e := range l.edges {
		l.drawEdge(&b, i, e, ports)
	}
	for _, n := range l.names() {
		nd := l.nodes[n]
		class := "node role"
		switch {
		case n == moderator.Start:
			class = "node start"
		case n == moderator.End:
			class = "node end"
		}
		fill, stroke := "#f4f6fb", "#5b6b8c"
		if n == l.current {
			class += " current"
			fill, stroke = "#fff4d6", "#c98a00"
		}
		rx := "6"
		if n == moderator.Start || n == moderator.End {
			rx = num(nodeHeight / 2)
		}
		fmt.Fprintf(&b, `<g class="%s" data-role="%s"><title>%s</title><rect x="%s" y="%s" width="%s" height="%s" rx="%s" fill="%s" stroke="%s" stroke-width="1.5"/><text x="%s" y="%s" text-anchor="middle" dominant-baseline="central" font-family="system-ui, sans-serif" font-size="13" fill="#1d2433">%s</text></g>`+"\n",
			class, esc(n), esc(n), num(nd.x-nd.w/2), num(nd.y), num(nd.w), num(nodeHeight), rx, fill, stroke,
			num(nd.x), num(nd.y+nodeHeight/2), esc(n))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// drawEdge writes one edge: a curve through its chain, an arrow at its
// target and its statuses as a label.
func (l *Layout) drawEdge(b *bytes.Buffer, i int, e *graphEdge, ports map[[2]string]float64) {
	label := strings.Join(e.labels, ", ")
	class := "edge"
	if e.back {
		class += " back"
	}
	var d strings.Builder
	var lx, ly float64
	if e.from == e.to {
		nd := l.nodes[e.from]
		x, y := nd.x+nd.w/2, nd.y+nodeHeight/2
		fmt.Fprintf(&d, "M%s,%s C%s,%s %s,%s %s,%s", num(x), num(y-8), num(x+loopReach), num(y-22),
			num(x+loopReach), num(y+22), num(x), num(y+8))
		lx, ly = x+loopReach+4, y
		fmt.Fprintf(b, `<g class="%s" data-from="%s" data-to="%s"><path d="%s" fill="none" stroke="#7a869a" stroke-width="1.4" marker-end="url(#arrow)"/><text class="edge-label" x="%s" y="%s" dominant-baseline="central" font-family="system-ui, sans-serif" font-size="11" fill="#4a5568">%s</text></g>`+"\n",
			class, esc(e.from), esc(e.to), d.String(), num(lx), num(ly), esc(label))
		return
	}
	// points from the upper end to the lower one
	type pt struct{ x, y float64 }
	var pts []pt
	pts = append(pts, pt{ports[[2]string{fmt.Sprint(i), "bottom"}], l.nodes[e.chain[0]].y + nodeHeight})
	for _, n := range e.chain[1 : len(e.chain)-1] {
		nd := l.nodes[n]
		pts = append(pts, pt{nd.x, nd.y}, pt{nd.x, nd.y + nodeHeight})
	}
	last := l.nodes[e.chain[len(e.chain)-1]]
	pts = append(pts, pt{ports[[2]string{fmt.Sprint(i), "top"}], last.y})
	if e.back {
		slices.Reverse(pts)
	}
	fmt.Fprintf(&d, "M%s,%s", num(pts[0].x), num(pts[0].y))
	for k := 1; k < len(pts); k++ {
		a, z := pts[k-1], pts[k]
		if a.x == z.x {
			fmt.Fprintf(&d, " L%s,%s", num(z.x), num(z.y))
			continue
		}
		my := (a.y + z.y) / 2
		fmt.Fprintf(&d, " C%s,%s %s,%s %s,%s", num(a.x), num(my), num(z.x), num(my), num(z.x), num(z.y))
	}
	// the label sits halfway along the middle segment between two layers
	k := len(pts) / 2
	a, z := pts[k-1], pts[k]
	if a.x == z.x && len(pts) > 2 { // through a dummy: use the gap below it
		a, z = pts[k], pts[min(k+1, len(pts)-1)]
	}
	lx, ly = (a.x+z.x)/2, (a.y+z.y)/2
	fmt.Fprintf(b, `<g class="%s" data-from="%s" data-to="%s"><path d="%s" fill="none" stroke="#7a869a" stroke-width="1.4" marker-end="url(#arrow)"/><text class="edge-label" x="%s" y="%s" text-anchor="middle" dominant-baseline="central" font-family="system-ui, sans-serif" font-size="11" fill="#4a5568" stroke="#ffffff" stroke-width="4" paint-order="stroke">%s</text></g>`+"\n",
		class, esc(e.from), esc(e.to), d.String(), num(lx), num(ly), esc(label))
}
