module Shop where

import Data.List (sort)

data Item = Item { name :: String, price :: Double }

class Priced a where
  price' :: a -> Double

total :: [Item] -> Double
total items = sum (map price items)

helper :: Int -> Int
helper x = x * 2
