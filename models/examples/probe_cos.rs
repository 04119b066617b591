use kgmesh_models::{minilm::MiniLm, Embedder};
#[tokio::main]
async fn main() {
    let m = MiniLm::load("models-cache/all-MiniLM-L6-v2").unwrap();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (words, labels) = args.split_at(args.iter().position(|a| a == "--").unwrap());
    let labels = &labels[1..];
    let mut texts: Vec<String> = words.to_vec();
    texts.extend(labels.iter().cloned());
    let v = m.embed(&texts).await.unwrap();
    let cos = |a: &[f32], b: &[f32]| {
        let d: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
        d / (na * nb)
    };
    for (i, w) in words.iter().enumerate() {
        let row: Vec<String> = labels
            .iter()
            .enumerate()
            .map(|(j, l)| format!("{l}={:.2}", cos(&v[i], &v[words.len() + j])))
            .collect();
        println!("{w}: {}", row.join("  "));
    }
}
