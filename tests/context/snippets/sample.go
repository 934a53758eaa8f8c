package geo

import "math"

type Point struct {
	X, Y float64
}

type Shape interface {
	Area() float64
}

func (p Point) Dist(q Point) float64 {
	return math.Hypot(p.X-q.X, p.Y-q.Y)
}

func NewPoint(x, y float64) Point {
	return Point{x, y}
}
